import type { ServerResponse } from 'node:http';

/** A gateway response (AWS::ApiGateway::GatewayResponse): its status, headers and body template. */
export interface GatewayResponse {
  status?: number;
  headers?: Record<string, string>;
  /** `$context.requestId` and `$context.error.messageString` are filled in, as API Gateway does. */
  template: string;
}

/** The gateway responses the local gateway gives (API Gateway's response types). */
export type GatewayResponseType =
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'AUTHORIZER_FAILURE'
  | 'REQUEST_TOO_LARGE'
  | 'THROTTLED'
  | 'WAF_FILTERED'
  | 'DEFAULT_4XX'
  | 'DEFAULT_5XX';

/** The per-field details of a refusal, as the API's error envelope carries them. */
export type Details = Array<{ field: string; message: string }>;

/** The envelope of the gateway's own answers. */
export const errorEnvelope = (code: string, message: string, requestId: string, details: Details = []) =>
  JSON.stringify({ error: { code, message, details }, request_id: requestId });

/** The gateway's own answers (missing route, authorizer deny, …) in the API's error envelope. */
export const gatewayError = (
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  requestId: string,
  options: { details?: Details; headers?: Record<string, string> } = {},
) => {
  const body = errorEnvelope(code, message, requestId, options.details);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'x-amzn-requestid': requestId,
    ...options.headers,
  });
  res.end(body);
};

/** What one of the gateway's own answers carries besides its message. */
export interface AnswerExtra {
  details?: Details;
  /** The authorizer's context, for a template's `$context.authorizer.<key>`. */
  authorizer?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** Writes one of the gateway's own answers, by its gateway response type. */
export type GatewayAnswer = (
  res: ServerResponse,
  type: GatewayResponseType,
  status: number,
  code: string,
  message: string,
  requestId: string,
  extra?: AnswerExtra,
) => void;

/**
 * One of the gateway's own answers: the template's gateway response of that type when there is
 * one (else its DEFAULT_4XX/5XX family), with the type's status, as API Gateway picks them;
 * otherwise the built-in envelope.
 */
export const gatewayAnswer =
  (responses: Partial<Record<GatewayResponseType, GatewayResponse>> | undefined): GatewayAnswer =>
  (res, type, status, code, message, requestId, extra = {}) => {
    const family = status >= 500 ? 'DEFAULT_5XX' : 'DEFAULT_4XX';
    const response = responses?.[type] ?? responses?.[family];
    if (!response) return gatewayError(res, status, code, message, requestId, { details: extra.details, headers: extra.headers });
    // API Gateway pastes $context values into the template as they are; ours stay valid JSON.
    const body = response.template
      .replaceAll('$context.requestId', requestId)
      .replaceAll('$context.error.messageString', JSON.stringify(message))
      .replace(/\$context\.authorizer\.(\w+)/g, (_m, key: string) => JSON.stringify(String(extra.authorizer?.[key] ?? '')).slice(1, -1));
    res.writeHead(response.status ?? status, {
      'content-type': 'application/json',
      ...response.headers,
      'content-length': String(Buffer.byteLength(body)),
      'x-amzn-requestid': requestId,
    });
    res.end(body);
  };
