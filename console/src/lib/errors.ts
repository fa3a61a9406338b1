/** One bad field of a 400, or why a credential is refused, as the API's error envelope names it. */
export interface ErrorDetail {
  field: string;
  message: string;
}

/** An answer of the API that is not a success, with what its error envelope says (DESIGN §7). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly requestId?: string,
  ) {
    super(message);
  }
}

/** A failure of Cognito's JSON API (`__type` and `message` of its answer). */
export class AuthError extends Error {
  override readonly name = 'AuthError';
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** An upload to storage that failed (S3's refusal, the network, the file), described already in words. */
export class UploadError extends Error {
  override readonly name = 'UploadError';
  constructor(
    message: string,
    /** What to do about it. */
    readonly lines: string[],
    /** S3's HTTP status (0: no answer the page may read). */
    readonly status = 0,
    /** S3's error code (`BadDigest`, `AccessDenied`, …). */
    readonly code = '',
  ) {
    super(message);
  }
}

/** What a person can do about an HTTP status, when the message alone does not say it. */
const HINTS: Record<number, string> = {
  401: 'Your session has ended: sign in again.',
  403: 'You are not allowed to do this.',
  404: 'It does not exist, or it belongs to another account. Reload the page to see what is there now.',
  409: 'It changed in the meantime, or already exists: reload and try again.',
  413: 'It is too large: send less at once.',
  429: 'Too many requests: wait a moment and try again.',
  500: 'The service failed. Try again; if it keeps failing, quote the request ID to the operator.',
};

/** Turns a `body.name`-style field path into the words a form shows ("name"). */
export const fieldLabel = (field: string) => field.replace(/^(body|query|path|header)\./, '').replace(/_/g, ' ');

/** Hints of a page for statuses whose general hint would not say what to do there (a 409 of a cancel). */
export type Hints = Partial<Record<number, string>>;

/**
 * Describes any failure in words a person can act on: the API's message, each bad field with
 * what is wrong with it, a hint for the status (the page's own `hints` first), and the request ID
 * to quote.
 */
export const describeError = (error: unknown, hints: Hints = {}): { title: string; lines: string[] } => {
  if (error instanceof ApiError) {
    const lines = error.details.map((d) => `${fieldLabel(d.field)}: ${d.message}`);
    const hint = hints[error.status] ?? HINTS[error.status] ?? (error.status >= 500 ? HINTS[500] : undefined);
    if (hint && !(error.status === 400 && lines.length)) lines.push(hint);
    if (error.requestId && error.status >= 500) lines.push(`Request ID: ${error.requestId}`);
    return { title: error.message, lines };
  }
  if (error instanceof AuthError) return { title: error.message, lines: [] };
  if (error instanceof UploadError) return { title: error.message, lines: error.lines };
  if (error instanceof TypeError) {
    // fetch rejects with a TypeError when no answer came at all
    return { title: 'The service could not be reached.', lines: ['Check your network connection, then try again.'] };
  }
  return { title: error instanceof Error ? error.message : String(error), lines: [] };
};
