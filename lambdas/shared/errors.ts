/** One bad field of a request, named by where it is (`body.name`, `query.status`, `path.deviceId`). */
export interface ErrorDetail {
  field: string;
  message: string;
  /** The value of the limit a 429 names (`limits.devices`: 10000). */
  value?: number;
}

interface AppErrorOptions {
  details?: ErrorDetail[];
  cause?: unknown;
  /** Headers of the answer besides its content type (`retry-after`). */
  headers?: Record<string, string>;
}

/** Base of every error the API answers with; `expose` says whether its message may reach the client. */
export class AppError extends Error {
  readonly details: ErrorDetail[];
  readonly expose: boolean;
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: AppErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.details = options.details ?? [];
    this.expose = status < 500;
    this.headers = options.headers ?? {};
  }
}

export class ValidationError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super(400, 'validation_error', message, options);
    this.name = 'ValidationError';
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'A valid X-API-KEY header is required.', options?: AppErrorOptions) {
    super(401, 'unauthorized', message, options);
    this.name = 'UnauthorizedError';
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super(403, 'forbidden', message, options);
    this.name = 'ForbiddenError';
  }
}

export class NotFoundError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super(404, 'not_found', message, options);
    this.name = 'NotFoundError';
  }
}

export class ConflictError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super(409, 'conflict', message, options);
    this.name = 'ConflictError';
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super(413, 'payload_too_large', message, options);
    this.name = 'PayloadTooLargeError';
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(message: string, options?: AppErrorOptions) {
    super(415, 'unsupported_media_type', message, options);
    this.name = 'UnsupportedMediaTypeError';
  }
}

export class ThrottledError extends AppError {
  constructor(message = 'The service is busy; retry with backoff.', options?: AppErrorOptions) {
    super(429, 'throttled', message, options);
    this.name = 'ThrottledError';
  }
}

/**
 * A workspace reached one of its quotas (spec/operations.md §5): `details` names the limit as
 * `limits.<name>` with its value. `retryAfterSeconds`, when a wait ends it (a device's daily points
 * start afresh at midnight UTC), becomes `Retry-After`.
 */
export class QuotaExceededError extends AppError {
  constructor(limit: string, value: number, message: string, options: AppErrorOptions & { retryAfterSeconds?: number } = {}) {
    super(429, 'quota_exceeded', message, {
      ...options,
      details: [{ field: `limits.${limit}`, message, value }],
      headers: options.retryAfterSeconds === undefined ? options.headers : { ...options.headers, 'retry-after': String(options.retryAfterSeconds) },
    });
    this.name = 'QuotaExceededError';
  }
}

/** A caller went over a rate (`limits.<name>`, with its value): retry after `Retry-After` seconds. */
export class RateLimitedError extends AppError {
  constructor(limit: string, value: number, message: string, retryAfterSeconds: number, options: AppErrorOptions = {}) {
    super(429, 'rate_limited', message, {
      ...options,
      details: [{ field: `limits.${limit}`, message, value }],
      headers: { 'retry-after': String(retryAfterSeconds) },
    });
    this.name = 'RateLimitedError';
  }
}

/** The JSON body of every error answer (DESIGN §7). */
export const errorBody = (error: AppError, requestId: string) => ({
  error: { code: error.code, message: error.message, details: error.details },
  request_id: requestId,
});
