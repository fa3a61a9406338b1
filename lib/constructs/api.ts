import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  AuthorizationType,
  Cors,
  EndpointType,
  IdentitySource,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  RequestAuthorizer,
  ResponseTransferMode,
  ResponseType,
  RestApi,
  type MethodOptions,
} from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { DEVICE_TOKEN_FIELD, REFUSAL_CONTEXT_KEY, type Route, type RouteAuth, type RouteHandler } from '../../lambdas/routes';
import { pascalCase } from '../names';
import { ApiFirewall } from './api-firewall';

/** The stage, and so the version segment of `base_url`. */
export const API_STAGE = 'v3';

/** The kinds of caller that an authorizer Lambda checks. */
export type AuthorizedBy = Exclude<RouteAuth, 'none'>;

/**
 * The identity sources (request headers) of each authorizer. With API Gateway's result cache on,
 * every identity source must be present or API Gateway answers 401 without calling the
 * authorizer (https://docs.aws.amazon.com/apigateway/latest/api/API_CreateAuthorizer.html,
 * `identitySource`). The API authorizer takes an X-API-KEY *or* a session's `Authorization`, so it
 * has none and API Gateway's cache is off for it (identity sources are optional only then); it
 * caches accepted credentials itself for the same TTL (AUTHORIZER_CACHE_TTL_SECONDS). The device
 * authorizer keeps API Gateway's cache, keyed by the device token.
 */
export const IDENTITY_HEADERS: Readonly<Record<AuthorizedBy, readonly string[]>> = {
  'api-key': [],
  device: ['Authorization'],
};

interface GatewayError {
  readonly type: ResponseType;
  /** Omitted: keep the status API Gateway chose (the DEFAULT_* families). */
  readonly status?: number;
  readonly code: string;
  /** A JSON string literal, or a `$context` variable that API Gateway renders as one. */
  readonly message: string;
  /** The `details` array as JSON (with `$context` variables); `[]` when omitted. */
  readonly details?: string;
  /** Headers of the answer besides its content type, with their values as written (`Retry-After`: 1). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** API Gateway's own answers, in the API's error envelope (DESIGN §7). */
export const GATEWAY_ERRORS: readonly GatewayError[] = [
  { type: ResponseType.UNAUTHORIZED, status: 401, code: 'unauthorized', message: JSON.stringify('Missing or invalid credentials.') },
  // Only a device token signed with the device's key but refused is denied (lambdas/shared/authorizer.ts): a 401 that says why.
  {
    type: ResponseType.ACCESS_DENIED,
    status: 401,
    code: 'unauthorized',
    message: JSON.stringify('The device token is refused.'),
    details: `[{"field":"${DEVICE_TOKEN_FIELD}","message":"$context.authorizer.${REFUSAL_CONTEXT_KEY}"}]`,
  },
  // An unknown route or method: API Gateway reports it as a missing authentication token.
  { type: ResponseType.MISSING_AUTHENTICATION_TOKEN, status: 404, code: 'not_found', message: JSON.stringify('No such route.') },
  // A method's throttle (the management API's or the device door's, ApiProps): the rate of that
  // method, which its callers share. A token comes back every 1/rate s, so a second is always enough to wait.
  {
    type: ResponseType.THROTTLED,
    status: 429,
    code: 'rate_limited',
    message: JSON.stringify('Too many requests for the API; retry after Retry-After seconds.'),
    headers: { 'Retry-After': '1' },
  },
  // The web ACL's per-IP rate rule blocked the caller's address (lib/constructs/api-firewall.ts):
  // WAF lifts the block once the address's requests over its window fall under the limit.
  {
    type: ResponseType.WAF_FILTERED,
    status: 403,
    code: 'forbidden',
    message: JSON.stringify('Blocked by the API’s firewall: too many requests from this address; retry later.'),
  },
  { type: ResponseType.REQUEST_TOO_LARGE, status: 413, code: 'payload_too_large', message: JSON.stringify('The request is larger than 10 MB.') },
  { type: ResponseType.DEFAULT_4XX, code: 'bad_request', message: '$context.error.messageString' },
  { type: ResponseType.DEFAULT_5XX, code: 'internal_error', message: JSON.stringify('Something went wrong on our side; retry later.') },
];

/** The body of a gateway response: `{"error":{code,message,details},"request_id"}`. */
export const gatewayErrorBody = ({ code, message, details = '[]' }: GatewayError) =>
  `{"error":{"code":${JSON.stringify(code)},"message":${message},"details":${details}},"request_id":"$context.requestId"}`;

/** What the API is built from: the route table, its Lambdas and the stage settings. */
export interface ApiProps {
  /** The route table (`lambdas/routes.ts` ROUTES): every row becomes one method. */
  readonly routes: readonly Route[];
  /** The Lambda behind each `handler` value of the table. */
  readonly handlers: ReadonlyMap<RouteHandler, IFunction>;
  /** The REQUEST authorizer Lambda for each kind of `auth` the table uses. */
  readonly authorizers: Partial<Record<AuthorizedBy, IFunction>>;
  readonly authorizerCacheTtl: Duration;
  /** Each management API method's throttle (the stage's default method settings): rate per second and burst. */
  readonly throttleRateLimit: number;
  readonly throttleBurstLimit: number;
  /** Each device door method's throttle (the routes with `auth: 'device'`, `/device/...`): rate per second and burst. */
  readonly deviceThrottleRateLimit: number;
  readonly deviceThrottleBurstLimit: number;
  /** The web ACL's per-IP rate rule: requests one address may send in `firewallWindowSeconds`. */
  readonly firewallIpRateLimit: number;
  readonly firewallWindowSeconds: number;
  /** @default one month */
  readonly logRetention?: RetentionDays;
  /** Of the access log group. @default RETAIN */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * The console's origin (`https://…`): the one origin browsers may call the API from (CORS
   * preflights, and gateway responses, so that the console can read a 401 or 429 too). The
   * handlers add the same header to their own answers (CORS_ALLOWED_ORIGIN). @default no CORS
   */
  readonly corsOrigin?: string;
}

/** The door a route belongs to, whose method throttle it has: devices' (`auth: 'device'`), or the management API's. */
export const throttleDoorOf = (route: Pick<Route, 'auth'>): 'device' | 'management' => (route.auth === 'device' ? 'device' : 'management');

/** Every method's execution logs: errors only, and request and response bodies (and their keys) left out. */
const EXECUTION_LOGS = { loggingLevel: MethodLoggingLevel.ERROR, dataTraceEnabled: false };

/** The request headers the console sends to the API. */
export const CORS_ALLOWED_HEADERS = ['Content-Type', 'Authorization', 'X-API-KEY'];

/**
 * The REST API, stage `v3`, built only from the route table: one method per row, a Lambda proxy
 * integration to the row's handler (streamed when the row says so), and the row's authorizer.
 * API Gateway's own errors answer in the API's JSON envelope.
 *
 * Throttling, outermost first: a WAF web ACL with a per-IP rate (ApiFirewall), then each method's
 * throttle, the device door's methods apart from the management API's (the stage's default),
 * so that a flood on one door never spends the other's; then the authorizers, and in the
 * handlers the rate per key and the quotas (docs/limits.md).
 */
export class Api extends Construct {
  readonly restApi: RestApi;
  /** `base_url`: the stage's address, ending in `/v3` (no trailing slash). */
  readonly url: string;
  /** The REQUEST authorizer of each kind of caller the routes use. */
  readonly authorizers: ReadonlyMap<AuthorizedBy, RequestAuthorizer>;
  /** The stage's access log (one JSON line per request). */
  readonly accessLogs: LogGroup;
  /** The WAF web ACL in front of the stage. */
  readonly firewall: ApiFirewall;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const accessLogs = (this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    }));
    this.restApi = new RestApi(this, 'RestApi', {
      description: 'Fleetstream v3 interface: device management and time-series storage',
      // Regional: an edge-optimized endpoint cuts a streamed answer after 30 s of idle time.
      endpointTypes: [EndpointType.REGIONAL],
      // Access and execution logs need the account's API Gateway CloudWatch role.
      cloudWatchRole: true,
      deployOptions: {
        stageName: API_STAGE,
        // The stage's default method settings (`/*\/*`): every method's, the management API's throttle.
        throttlingRateLimit: props.throttleRateLimit,
        throttlingBurstLimit: props.throttleBurstLimit,
        ...EXECUTION_LOGS,
        // API Gateway applies a stage's throttle to each method; a method setting of its own
        // replaces the default for that method: the device door's.
        // https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html
        methodOptions: Object.fromEntries(
          props.routes
            .filter((route) => throttleDoorOf(route) === 'device')
            .map((route) => [
              `${route.path}/${route.method}`,
              { ...EXECUTION_LOGS, throttlingRateLimit: props.deviceThrottleRateLimit, throttlingBurstLimit: props.deviceThrottleBurstLimit },
            ]),
        ),
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            ip: AccessLogField.contextIdentitySourceIp(),
            requestTime: AccessLogField.contextRequestTime(),
            httpMethod: AccessLogField.contextHttpMethod(),
            resourcePath: AccessLogField.contextResourcePath(),
            status: AccessLogField.contextStatus(),
            responseLength: AccessLogField.contextResponseLength(),
            responseLatency: AccessLogField.contextResponseLatency(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            accountId: AccessLogField.contextAuthorizerPrincipalId(),
            authorizerError: AccessLogField.contextAuthorizerError(),
            errorType: AccessLogField.contextErrorResponseType(),
          }),
        ),
      },
      // Preflights are answered by API Gateway itself (MOCK integrations, no authorizer: a browser
      // sends no credentials with them).
      ...(props.corsOrigin
        ? {
            defaultCorsPreflightOptions: {
              allowOrigins: [props.corsOrigin],
              allowHeaders: CORS_ALLOWED_HEADERS,
              allowMethods: Cors.ALL_METHODS,
              maxAge: Duration.hours(1),
            },
          }
        : {}),
    });
    // RestApi adds an output of the stage URL with a trailing slash; the stack's ApiUrl replaces it.
    this.restApi.node.tryRemoveChild('Endpoint');
    const stage = this.restApi.deploymentStage;
    this.firewall = new ApiFirewall(this, 'Firewall', { stage, ipRateLimit: props.firewallIpRateLimit, windowSeconds: props.firewallWindowSeconds });
    this.url = `https://${this.restApi.restApiId}.execute-api.${Stack.of(this).region}.${Stack.of(this).urlSuffix}/${stage.stageName}`;

    for (const error of GATEWAY_ERRORS) {
      this.restApi.addGatewayResponse(`Gateway${error.type.responseType}`, {
        type: error.type,
        statusCode: error.status?.toString(),
        responseHeaders: {
          'Content-Type': "'application/json'",
          ...Object.fromEntries(Object.entries(error.headers ?? {}).map(([name, value]) => [name, `'${value}'`])),
          ...(props.corsOrigin ? { 'Access-Control-Allow-Origin': `'${props.corsOrigin}'`, Vary: "'Origin'" } : {}),
        },
        templates: { 'application/json': gatewayErrorBody(error) },
      });
    }

    const authorizers = new Map<AuthorizedBy, RequestAuthorizer>();
    const authorizerFor = (auth: AuthorizedBy) => {
      const existing = authorizers.get(auth);
      if (existing) return existing;
      const handler = props.authorizers[auth];
      if (!handler) throw new Error(`A route needs auth '${auth}' but no ${auth} authorizer Lambda was given.`);
      const authorizer = new RequestAuthorizer(this, `${pascalCase(auth)}Authorizer`, {
        handler,
        identitySources: IDENTITY_HEADERS[auth].map((header) => IdentitySource.header(header)),
        resultsCacheTtl: IDENTITY_HEADERS[auth].length ? props.authorizerCacheTtl : Duration.seconds(0),
      });
      authorizers.set(auth, authorizer);
      return authorizer;
    };

    const integrations = new Map<string, LambdaIntegration>();
    const integrationFor = (route: Route) => {
      const key = `${route.handler}${route.stream ? ':stream' : ''}`;
      const existing = integrations.get(key);
      if (existing) return existing;
      const handler = props.handlers.get(route.handler);
      if (!handler) throw new Error(`Route ${route.method} ${route.path} names handler '${route.handler}', which has no Lambda.`);
      const integration = new LambdaIntegration(handler, {
        proxy: true,
        // One invoke permission per handler, for this API's methods (execute-api:/<api>/*/*/*), not
        // one per method: a permission per method put the stack past CloudFormation's 500
        // resources (issue 35's routes). API Gateway invokes a function only through the methods
        // whose integration names it, so the wider source ARN lets nothing else call it. (A
        // method-scoped permission also had a test-invoke twin unless allowTestInvoke was off; an
        // API-scoped one has none.)
        // https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_apigateway.LambdaIntegrationOptions.html#scopepermissiontomethod
        scopePermissionToMethod: false,
        responseTransferMode: route.stream ? ResponseTransferMode.STREAM : ResponseTransferMode.BUFFERED,
      });
      integrations.set(key, integration);
      return integration;
    };

    for (const route of props.routes) {
      const options: MethodOptions =
        route.auth === 'none'
          ? { authorizationType: AuthorizationType.NONE, operationName: route.operationId }
          : { authorizationType: AuthorizationType.CUSTOM, authorizer: authorizerFor(route.auth), operationName: route.operationId };
      const method = this.restApi.root.resourceForPath(route.path).addMethod(route.method, integrationFor(route), options);
      if (route.auth === 'none') {
        Validations.of(method).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: `${route.method} ${route.path} is public by design (route table auth 'none'): ${route.summary}.`,
        });
      }
    }
    this.authorizers = authorizers;

    for (const method of this.restApi.methods.filter((m) => m.httpMethod === 'OPTIONS')) {
      Validations.of(method).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason: 'A CORS preflight for the console’s origin (a MOCK integration, no data): browsers send preflights without credentials.',
      });
    }
    Validations.of(this).acknowledge(
      {
        id: 'AwsSolutions-COG4',
        reason:
          'Callers are v3 API clients with API keys, console users with Cognito access tokens and devices with signed tokens (DESIGN §4, §10), all checked by Lambda REQUEST authorizers: a Cognito authorizer would refuse the API keys on the same routes.',
      },
      {
        id: 'AwsSolutions-APIG2',
        reason:
          'Every path parameter, query and body is validated in the handlers with zod, so that a 400 names each bad field in the API’s error envelope; an API Gateway validator would answer first, in its own shape.',
      },
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          'The account-level role that lets API Gateway write access and execution logs; AWS maintains this service-role policy for exactly that purpose.',
      },
    );
  }
}
