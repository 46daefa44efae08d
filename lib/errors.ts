/**
 * The one error catalog. Every failure the API returns is an AppError with a stable code;
 * lib/error-response.ts turns it into `{"error":{"code","message"}}`. The webchat socket's
 * `error` frames answer codes of this catalog too (gateway/webchat/frames.ts lists which).
 */
export interface FieldError {
  field: string;
  message: string;
}

export const ERRORS = {
  VALIDATION_ERROR: { status: 400, message: 'The request is not valid.' },
  INVALID_FRAME: { status: 400, message: 'A webchat frame must be a JSON object with a string "type".' },
  UNKNOWN_TYPE: { status: 400, message: 'Unknown webchat frame type; expected hello, identify, message, typing or ping.' },
  not_supported: { status: 400, message: 'This integration has no apiUrl configured.' },
  UNAUTHORIZED: { status: 401, message: 'A valid Bearer token is required.' },
  INVALID_CREDENTIALS: { status: 401, message: 'Wrong email or password.' },
  REFRESH_FAILED: { status: 401, message: 'The refresh token is invalid or expired.' },
  INVALID_SIGNATURE: { status: 401, message: 'The webhook signature is missing or invalid.' },
  INVALID_TOKEN: { status: 401, message: 'The visitor token is not valid here.' },
  IDENTITY_INVALID: { status: 401, message: 'The identity hash does not verify; the chat goes on anonymously.' },
  FORBIDDEN: { status: 403, message: 'This credential may not do that.' },
  QUOTA_EXCEEDED: { status: 403, message: 'The company has reached its limit for this resource.' },
  INTEGRATION_INACTIVE: { status: 403, message: 'The integration is not active.' },
  HTTPS_REQUIRED: { status: 403, message: 'Webhooks must be delivered over HTTPS.' },
  ORIGIN_NOT_ALLOWED: { status: 403, message: 'This page may not open the chat.' },
  NOT_FOUND: { status: 404, message: 'Not found.' },
  CONFLICT: { status: 409, message: 'The resource is in a conflicting state.' },
  HELLO_REQUIRED: { status: 409, message: 'Send hello first.' },
  ALREADY_WELCOMED: { status: 409, message: 'hello was already answered on this socket.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Send the body as application/json.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests; retry later.' },
  USER_CREATION_FAILED: { status: 500, message: 'The account could not be created (the email may already exist).' },
  INTERNAL_ERROR: { status: 500, message: 'Internal server error.' },
  UPSTREAM_ERROR: { status: 502, message: 'The helpdesk refused the request or is unreachable.' },
  QUEUE_UNAVAILABLE: { status: 503, message: 'The message queue is unavailable; retry later.' },
  NOT_READY: { status: 503, message: 'A dependency is unavailable.' },
  TIMEOUT: { status: 503, message: 'The request took too long; retry later.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: FieldError[];
  /** Extra response headers, e.g. Retry-After. */
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message?: string,
    options: { details?: FieldError[]; cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message ?? ERRORS[code].message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.details = options.details;
    this.headers = options.headers;
  }
}

export const notFound = (what = 'Resource'): AppError => new AppError('NOT_FOUND', `${what} not found.`);

/** Raised at start when the environment is unusable; the message names the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** `err` and the errors it was raised from (its `cause` chain), five at most. */
export function* causesOf(err: unknown): Generator<Error & { code?: unknown }> {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) yield e;
}
