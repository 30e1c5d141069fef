// The one catalogue of error codes Roost answers with (docs/api.md "Errors").
// Every error response is rendered from an ApiError by lib/http/io.ts#renderError, so a code
// always carries the same HTTP status wherever it is raised.

export const ERROR_STATUS = {
  // request shape (any endpoint)
  invalid_request: 400,
  malformed_json: 400,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  // the request's body did not arrive within ROOST_REQUEST_TIMEOUT_SECONDS (RFC 9110 §15.5.9); the connection is closed
  request_timeout: 408,
  // the request line and headers are over the listener's limit (RFC 6585 §5)
  headers_too_large: 431,
  unsupported_media_type: 415,
  internal_error: 500,
  not_ready: 503,
  // the database server (sqld) does not answer: every daemon of it answers this until it does (docs/operations.md "Several hosts")
  database_unavailable: 503,
  // the data directory's disk or quota is full (lib/daemon/disk.ts; RFC 4918 §11.5)
  insufficient_storage: 507,
  // the configured S3-compatible object store refused or could not be reached (lib/object-store/s3.ts)
  object_store_error: 502,

  // credentials
  missing_auth: 401,
  invalid_session: 401,
  invalid_token: 401,
  // a credential of a kind the endpoint never takes (a runner token on a user endpoint), told by its prefix alone
  wrong_credential: 401,
  forbidden: 403,
  // a state-changing request signed in by the browser session cookie without X-Roost-CSRF: 1, or from another origin
  csrf_refused: 403,

  // setup and instance state
  setup_incomplete: 409,
  setup_already_complete: 409,
  invalid_setup_token: 401,
  owner_required: 409,
  owner_exists: 409,
  remote_auth_not_configured: 409,

  // local login and recovery
  email_required: 400,
  mode_restricted: 403,
  local_login_loopback_required: 403,
  local_login_host_not_allowed: 403,
  local_login_origin_not_allowed: 403,
  user_not_found: 403,
  recovery_capability_required: 403,
  local_capability_required: 403,
  recovery_capability_invalid: 403,

  // External Access sign-in (OIDC and trusted proxy; docs/external-access.md)
  too_many_pending: 429,
  // the instance's sign-in is not set up for this (a state an owner changes), never a server fault
  oidc_not_configured: 409,
  oidc_discovery_error: 502,
  invalid_state: 400,
  auth_expired: 400,
  session_error: 500,
  store_error: 500,
  token_exchange_error: 502,
  missing_id_token: 502,
  id_token_verification_error: 502,
  missing_email: 502,
  email_not_verified: 403,
  oidc_identity_mismatch: 403,
  trusted_proxy_peer_not_allowed: 403,
  trusted_proxy_shared_secret_missing: 401,
  trusted_proxy_shared_secret_invalid: 401,
  trusted_proxy_identity_missing: 401,
  trusted_proxy_identity_invalid: 401,

  // users and tokens
  user_exists: 409,
  last_owner: 409,
  role_not_allowed: 403,
  token_not_found: 404,

  // CI domain (docs/api.md)
  decryption_error: 500,
  source_host_error: 502,
  integration_in_use: 409,
  pipeline_exists: 409,
  // a repository is built by exactly one project (docs/webhooks.md "Who builds a repository")
  repository_already_linked: 409,
  build_not_cancelable: 409,
  pipeline_disabled: 409,
  // a schedule synced from the pipeline file: only a push of the file to the default branch changes it
  schedule_from_file: 409,
  // the pipeline file (roost.yaml) at the build's commit is invalid or does not define the pipeline (docs/pipelines.md)
  invalid_pipeline_file: 400,

  // runners and logs (docs/runners.md)
  job_not_assigned: 409,
  job_finished: 410,
  log_gap: 416,
  log_incomplete: 409,
  job_started: 409,
  artifact_checksum_mismatch: 422,
  artifact_exists: 409,
  // a test report at this path was already uploaded for the build (a retried upload)
  test_report_exists: 409,
  // a shared cache with this key was already saved in the build's scope (entries are immutable; docs/runners.md "Shared caches")
  cache_exists: 409,
  cache_checksum_mismatch: 422,

  // publishing (docs/publishing.md)
  // approve or reject a deployment that is not waiting for a decision (decided already, or never needed one)
  deployment_not_waiting: 409,
  // retry a deployment that did not fail (it is waiting, running, succeeded or rejected)
  deployment_not_retryable: 409,
  // promote a build that did not succeed, or whose artifacts retention deleted
  build_not_publishable: 409,

  // webhooks (docs/webhooks.md)
  webhook_signature_missing: 401,
  webhook_signature_invalid: 401,
  webhook_token_missing: 401,
  webhook_token_invalid: 401,
  // a verified delivery whose payload is not what the host sends (wrong types, null, an array)
  invalid_payload: 400,
  // a verified delivery Roost could not act on (an unexpected database error): recorded as failed,
  // nothing built, answered 5xx so the host redelivers it (docs/webhooks.md)
  webhook_delivery_failed: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The sentence a code carries wherever it is raised without a more specific one. */
export const DEFAULT_MESSAGE: Partial<Record<ErrorCode, string>> = {
  malformed_json: "The request body is not valid JSON.",
  unsupported_media_type: "The request body must be JSON (Content-Type: application/json).",
  internal_error: "An unexpected error occurred.",
  database_unavailable: "The database does not answer; try again in a moment.",
  missing_auth: "This endpoint needs 'Authorization: Bearer <token>'.",
  invalid_session: "The session is invalid or has expired; sign in again.",
  invalid_token: "The token is not valid.",
  forbidden: "You may not do this.",
  setup_already_complete: "Setup is complete; setup endpoints accept no more changes.",
  oidc_not_configured:
    'Sign-in with an identity provider is not configured on this instance: an owner stores the provider with PUT /v1/settings/oidc and turns it on with PUT /v1/settings/runtime-mode {"runtime_mode":"remote","remote_auth_mode":"oidc"} (docs/external-access.md).',
  oidc_discovery_error: "The identity provider's discovery document could not be fetched or is not valid.",
  token_exchange_error: "The identity provider refused the authorization code.",
  decryption_error: "The integration's credentials cannot be decrypted with this instance's secret key.",
  job_not_assigned: "This job is not assigned to this runner.",
  job_started: "This job has started (it reported a step or a log line); finish it instead of releasing it.",
};

export interface ErrorDetail {
  path: string;
  message: string;
  /** Where in a file the problem is (invalid_pipeline_file), 1-based. */
  line?: number;
  column?: number;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message?: string, options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message ?? DEFAULT_MESSAGE[code] ?? code.replace(/_/g, " "));
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = options.details;
    this.headers = options.headers;
  }
}

/** The database server does not answer: 503 with Retry-After (RFC 9110 §10.2.3), since it usually comes back by itself. */
export function databaseUnavailableError(): ApiError {
  return new ApiError("database_unavailable", undefined, { headers: { "retry-after": "5" } });
}

/** Throws the catalogue error `code`; reads as one line at the point of refusal. */
export function fail(code: ErrorCode, message?: string, options?: { details?: ErrorDetail[]; headers?: Record<string, string> }): never {
  throw new ApiError(code, message, options);
}
