-- Roost's database schema, as the ordered list of migrations that build it.
--
-- Each block starting with "-- migration N: name" is applied once, in order, inside one write
-- transaction, and recorded in schema_migrations (lib/db/migrate.ts). A released block is never
-- edited: a change to the schema is a new block at the end. Timestamps are Unix epoch seconds
-- (docs/api.md "Conventions"). Secrets are stored only as SHA-256 hex of their secret part (lib/auth/secrets.ts).

-- migration 1: foundation
CREATE TABLE instance (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  state TEXT NOT NULL CHECK (state IN ('incomplete', 'ready')),
  runtime_mode TEXT CHECK (runtime_mode IN ('local', 'remote')),
  remote_auth_mode TEXT CHECK (remote_auth_mode IN ('oidc', 'trusted_proxy')),
  preferences_set_at INTEGER,
  ready_at INTEGER,
  created_at INTEGER NOT NULL
);
INSERT INTO instance (id, state, created_at) VALUES (1, 'incomplete', unixepoch());

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'maintainer', 'developer')),
  active INTEGER NOT NULL DEFAULT 1,
  oidc_issuer TEXT,
  oidc_subject TEXT,
  avatar_url TEXT NOT NULL DEFAULT '',
  invited_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  deactivated_at INTEGER
);
CREATE UNIQUE INDEX users_oidc_identity ON users (oidc_issuer, oidc_subject) WHERE oidc_subject IS NOT NULL;

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  method TEXT NOT NULL CHECK (method IN ('local', 'oidc', 'trusted_proxy')),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);

CREATE TABLE api_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'maintainer', 'developer')),
  created_by TEXT NOT NULL REFERENCES users(id),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX api_tokens_creator ON api_tokens (created_by);

-- One-time credentials that only a person with access to the host can obtain:
-- the setup token (file in the data dir, or minted over the management socket) and
-- recovery capabilities (minted over the management socket by `roost recover`).
CREATE TABLE setup_tokens (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE TABLE recovery_capabilities (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);

-- migration 2: ci domain
-- Source integrations: a GitHub App installation or a GitLab instance connection. Credentials
-- are sealed with the secret box (AES-GCM, key outside the database) and never returned.
CREATE TABLE integrations (
  id TEXT PRIMARY KEY,
  provider TEXT NOT NULL CHECK (provider IN ('github', 'gitlab')),
  name TEXT NOT NULL,
  api_url TEXT NOT NULL,
  web_url TEXT NOT NULL,
  app_id TEXT,
  installation_id TEXT,
  credentials_sealed TEXT NOT NULL,
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_synced_at INTEGER,
  last_sync_error TEXT
);

-- The repository catalogue, synced from each integration through the host's REST API.
CREATE TABLE repositories (
  id TEXT PRIMARY KEY,
  integration_id TEXT NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
  provider TEXT NOT NULL CHECK (provider IN ('github', 'gitlab')),
  external_id TEXT NOT NULL,
  full_name TEXT NOT NULL,
  default_branch TEXT NOT NULL,
  is_private INTEGER NOT NULL DEFAULT 1,
  avatar_url TEXT NOT NULL DEFAULT '',
  installation_id TEXT NOT NULL DEFAULT '',
  host_url TEXT NOT NULL,
  clone_url TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (integration_id, external_id)
);
CREATE INDEX repositories_full_name ON repositories (full_name);
CREATE INDEX repositories_external ON repositories (provider, external_id);

CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  repository_id TEXT NOT NULL REFERENCES repositories(id),
  default_branch TEXT NOT NULL,
  settings TEXT NOT NULL DEFAULT '{}',
  -- The next build number; taken and incremented in the same write transaction as the build insert,
  -- so numbers never repeat or skip, across processes too.
  next_build_number INTEGER NOT NULL DEFAULT 1,
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX projects_repository ON projects (repository_id);

-- Project-level roles (docs/authorization.md): maintainer configures, developer builds, viewer sees.
CREATE TABLE project_members (
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id),
  role TEXT NOT NULL CHECK (role IN ('maintainer', 'developer', 'viewer')),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members (user_id);

CREATE TABLE pipelines (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  config_path TEXT NOT NULL,
  config_path_explicit INTEGER NOT NULL DEFAULT 0,
  cancel_previous INTEGER NOT NULL DEFAULT 0,
  max_concurrent INTEGER NOT NULL DEFAULT 1,
  trigger_config TEXT NOT NULL,
  execution_config TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, name)
);

CREATE TABLE builds (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  build_number INTEGER NOT NULL,
  runner_id TEXT,
  source_build_id TEXT REFERENCES builds(id) ON DELETE SET NULL,
  branch TEXT NOT NULL,
  commit_sha TEXT NOT NULL,
  changelog TEXT NOT NULL DEFAULT '',
  config_snapshot TEXT NOT NULL,
  context TEXT,
  runner_policy_block_reason TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
  exit_code INTEGER,
  failure_reason TEXT,
  -- cancel_previous groups builds by this key: "branch:<name>" for pushes, "pr:<number>" for pull requests; NULL for tags and manual builds.
  concurrency_key TEXT,
  trigger_type TEXT NOT NULL CHECK (trigger_type IN ('manual', 'rerun', 'webhook')),
  trigger_event TEXT NOT NULL DEFAULT '',
  trigger_ref TEXT NOT NULL DEFAULT '',
  trigger_actor TEXT NOT NULL DEFAULT '',
  step_results TEXT NOT NULL DEFAULT '[]',
  created_by TEXT REFERENCES users(id),
  queued_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, build_number)
);
CREATE INDEX builds_pipeline_status ON builds (pipeline_id, status);
CREATE INDEX builds_status_queued ON builds (status, queued_at);

-- Conditions an operator must act on, deduplicated per resource and reason while open.
CREATE TABLE operator_incidents (
  id TEXT PRIMARY KEY,
  severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  status TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
  reason TEXT NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  repair_action TEXT NOT NULL DEFAULT '',
  repair_url TEXT NOT NULL DEFAULT '',
  resource_id TEXT NOT NULL,
  resource_kind TEXT NOT NULL,
  resource_name TEXT NOT NULL DEFAULT '',
  first_occurrence_at INTEGER NOT NULL,
  latest_occurrence_at INTEGER NOT NULL,
  occurrence_count INTEGER NOT NULL DEFAULT 1,
  read_at INTEGER,
  resolved_at INTEGER
);
CREATE UNIQUE INDEX operator_incidents_open ON operator_incidents (resource_kind, resource_id, reason) WHERE status = 'open';

-- migration 3: external access sign-in
-- External Access sign-in (docs/external-access.md). One row each: the OIDC provider (client
-- secret sealed with the key outside the database, lib/crypto/secret-box.ts) and the trusted proxy
-- (shared secret stored as SHA-256 hex only: it is a verifier, never sent anywhere).
CREATE TABLE oidc_settings (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  issuer TEXT NOT NULL,
  client_id TEXT NOT NULL,
  client_secret_sealed TEXT NOT NULL,
  scopes TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  id_token_algs TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE trusted_proxy_settings (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  trusted_peers TEXT NOT NULL,
  identity_header TEXT NOT NULL,
  shared_secret_hash TEXT,
  updated_at INTEGER NOT NULL
);
-- Pending OIDC authorizations: in the database so any daemon process can finish a flow
-- another started. The state and the browser binding are stored hashed; the PKCE verifier and the
-- nonce never leave the server.
CREATE TABLE oidc_pending (
  state_hash TEXT PRIMARY KEY,
  binding_hash TEXT NOT NULL,
  nonce TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  peer TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX oidc_pending_peer ON oidc_pending (peer, created_at);
CREATE INDEX oidc_pending_expiry ON oidc_pending (expires_at);

-- migration 4: runners, jobs and logs
-- Runners are registered by an admin; the token (roost_rt_…) is stored hashed. Labels are the
-- admin's plus what the runner advertises on connect; capabilities are what it reports
-- (os, arch, flutter versions, Xcode).
CREATE TABLE runners (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  labels TEXT NOT NULL DEFAULT '[]',
  advertised_labels TEXT NOT NULL DEFAULT '[]',
  capabilities TEXT NOT NULL DEFAULT '{}',
  version TEXT NOT NULL DEFAULT '',
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER,
  revoked_at INTEGER
);

-- A job is one runner's attempt at a build: claimed atomically (one running job per build),
-- kept alive by heartbeats before lease_expires_at, fenced to its runner. next_line is the
-- job-local index of the next log line it must send (idempotent appends).
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  runner_id TEXT NOT NULL REFERENCES runners(id),
  claim_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'lost')),
  lease_expires_at INTEGER NOT NULL,
  next_line INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  UNIQUE (runner_id, claim_id)
);
CREATE UNIQUE INDEX jobs_one_running_per_build ON jobs (build_id) WHERE status = 'running';
CREATE INDEX jobs_lease ON jobs (status, lease_expires_at);

-- Build logs: one row a line, numbered per build (seq: the SSE event id, stable forever).
CREATE TABLE build_logs (
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  step TEXT NOT NULL DEFAULT '',
  stream TEXT NOT NULL DEFAULT 'stdout',
  ts INTEGER NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY (build_id, seq)
);
-- Per-build log accounting: the last seq, bytes kept, and what the cap cut (head and tail kept).
CREATE TABLE build_log_stats (
  build_id TEXT PRIMARY KEY REFERENCES builds(id) ON DELETE CASCADE,
  last_seq INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0,
  head_last_seq INTEGER,
  cut_lines INTEGER NOT NULL DEFAULT 0,
  cut_bytes INTEGER NOT NULL DEFAULT 0
);

-- Short-lived, read-only tokens for one build's log stream (EventSource cannot send headers).
CREATE TABLE stream_tokens (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

-- migration 5: webhook deliveries and commit statuses
-- Every delivery, verified or not, with the decision for each pipeline (docs/webhooks.md).
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL CHECK (host IN ('github', 'gitlab')),
  delivery_id TEXT NOT NULL DEFAULT '',
  event TEXT NOT NULL DEFAULT '',
  action TEXT NOT NULL DEFAULT '',
  verified INTEGER NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('built', 'ignored', 'duplicate', 'rejected')),
  reason TEXT NOT NULL,
  repository_external_id TEXT,
  repository_full_name TEXT,
  repository_id TEXT,
  project_id TEXT,
  commit_sha TEXT,
  decisions TEXT NOT NULL DEFAULT '[]',
  duplicate_of TEXT,
  body TEXT,
  received_at INTEGER NOT NULL,
  body_expires_at INTEGER
);
CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, received_at);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
CREATE INDEX webhook_deliveries_rejected ON webhook_deliveries (repository_id, verified, received_at);

-- Delivery identities already acted on: the host's delivery ids and a digest of the content, so a
-- redelivery, a concurrent copy or a replayed body under a new id creates nothing (unique key).
CREATE TABLE webhook_dedupe_keys (
  key TEXT PRIMARY KEY,
  delivery_id TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX webhook_dedupe_keys_created ON webhook_dedupe_keys (created_at);

-- GitLab sends a plain shared token: one per repository, stored hashed, rotated by a maintainer.
ALTER TABLE repositories ADD COLUMN webhook_token_hash TEXT;

-- Commit statuses reported to the host, per build: the reporter sends whatever differs from
-- the build's status, retrying with backoff; works from any daemon process.
CREATE TABLE commit_status_reports (
  build_id TEXT PRIMARY KEY REFERENCES builds(id) ON DELETE CASCADE,
  reported_status TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  updated_at INTEGER NOT NULL
);

-- migration 6: build artifacts
-- Files a runner uploads after a build (artifact_patterns), stored under the data dir
-- (artifacts/<build id>/<artifact id>) with their size and SHA-256.
CREATE TABLE artifacts (
  id TEXT PRIMARY KEY,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  job_id TEXT NOT NULL,
  path TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (build_id, path)
);

-- migration 7: one project per repository, webhook tokens per project
-- A repository is built by exactly one project, so nobody can change how a project builds by
-- linking its repository a second time. Databases made before this rule may hold several projects
-- on one repository: the oldest keeps it; the others are unlinked (they keep their pipelines and
-- build history, but no delivery reaches them) and an operator incident names each.
ALTER TABLE projects ADD COLUMN unlinked_at INTEGER;
UPDATE projects SET unlinked_at = unixepoch() WHERE EXISTS (
  SELECT 1 FROM projects older WHERE older.repository_id = projects.repository_id
    AND (older.created_at < projects.created_at OR (older.created_at = projects.created_at AND older.id < projects.id))
);
CREATE UNIQUE INDEX projects_one_per_repository ON projects (repository_id) WHERE unlinked_at IS NULL;
INSERT INTO operator_incidents (id, severity, status, reason, message, repair_action, resource_id, resource_kind, resource_name, first_occurrence_at, latest_occurrence_at)
  SELECT lower(hex(randomblob(16))), 'warning', 'open', 'project_unlinked',
    'Project ' || p.name || ' was unlinked from ' || r.full_name || ': an older project builds that repository, and a repository is built by exactly one project.',
    'Move what this project needs into the project that builds the repository, then delete this project.',
    p.id, 'project', p.name, p.unlinked_at, p.unlinked_at
  FROM projects p JOIN repositories r ON r.id = p.repository_id WHERE p.unlinked_at IS NOT NULL;

-- The GitLab webhook token belongs to the project (roost_whk_<project id>…, stored hashed) and is
-- deleted with it. Tokens minted per repository are not carried over: any maintainer of any
-- project on the repository could have minted the current one, so every GitLab project mints a
-- new token after this upgrade.
ALTER TABLE projects ADD COLUMN webhook_token_hash TEXT;
UPDATE repositories SET webhook_token_hash = NULL;

-- migration 8: any git repository
-- Integrations and catalogue entries may also be a Gitea/Forgejo instance ('gitea') or a plain git
-- remote ('git'), and deliveries may come from them. SQLite cannot change a CHECK constraint in
-- place, so the three tables are rebuilt through copies (https://www.sqlite.org/lang_altertable.html
-- section 7). Foreign keys cannot be switched off inside the migration's transaction; instead their
-- checks are deferred to its commit: dropping `repositories` leaves projects pointing at ids that
-- are back, unchanged, when the copy is inserted, and `repositories` is dropped before
-- `integrations`, so its ON DELETE CASCADE has no rows to act on.
PRAGMA defer_foreign_keys = ON;
CREATE TABLE integrations_copy AS SELECT * FROM integrations;
CREATE TABLE repositories_copy AS SELECT * FROM repositories;
CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries;
DROP TABLE repositories;
DROP TABLE integrations;
DROP TABLE webhook_deliveries;
CREATE TABLE integrations (
  id TEXT PRIMARY KEY,
  provider TEXT NOT NULL CHECK (provider IN ('github', 'gitlab', 'gitea', 'git')),
  name TEXT NOT NULL,
  api_url TEXT NOT NULL,
  web_url TEXT NOT NULL,
  app_id TEXT,
  installation_id TEXT,
  credentials_sealed TEXT NOT NULL,
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_synced_at INTEGER,
  last_sync_error TEXT
);
INSERT INTO integrations (id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_by, created_at, updated_at, last_synced_at, last_sync_error)
  SELECT id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_by, created_at, updated_at, last_synced_at, last_sync_error FROM integrations_copy;
CREATE TABLE repositories (
  id TEXT PRIMARY KEY,
  integration_id TEXT NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
  provider TEXT NOT NULL CHECK (provider IN ('github', 'gitlab', 'gitea', 'git')),
  external_id TEXT NOT NULL,
  full_name TEXT NOT NULL,
  default_branch TEXT NOT NULL,
  is_private INTEGER NOT NULL DEFAULT 1,
  avatar_url TEXT NOT NULL DEFAULT '',
  installation_id TEXT NOT NULL DEFAULT '',
  host_url TEXT NOT NULL,
  clone_url TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  webhook_token_hash TEXT,
  UNIQUE (integration_id, external_id)
);
INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at, webhook_token_hash)
  SELECT id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at, webhook_token_hash FROM repositories_copy;
CREATE INDEX repositories_full_name ON repositories (full_name);
CREATE INDEX repositories_external ON repositories (provider, external_id);
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL CHECK (host IN ('github', 'gitlab', 'gitea', 'git')),
  delivery_id TEXT NOT NULL DEFAULT '',
  event TEXT NOT NULL DEFAULT '',
  action TEXT NOT NULL DEFAULT '',
  verified INTEGER NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('built', 'ignored', 'duplicate', 'rejected')),
  reason TEXT NOT NULL,
  repository_external_id TEXT,
  repository_full_name TEXT,
  repository_id TEXT,
  project_id TEXT,
  commit_sha TEXT,
  decisions TEXT NOT NULL DEFAULT '[]',
  duplicate_of TEXT,
  body TEXT,
  received_at INTEGER NOT NULL,
  body_expires_at INTEGER
);
INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at)
  SELECT id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at FROM webhook_deliveries_copy;
CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, received_at);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
CREATE INDEX webhook_deliveries_rejected ON webhook_deliveries (repository_id, verified, received_at);
DROP TABLE integrations_copy;
DROP TABLE repositories_copy;
DROP TABLE webhook_deliveries_copy;

-- Polling of plain git remotes (docs/any-git.md): one row per polled repository. A process takes
-- a due repository by moving lease_until forward in one UPDATE that only succeeds while no other
-- lease is live, so each repository is polled by one process at a time however many daemons run.
-- heads is the JSON {ref: sha} seen by the last successful poll (NULL before the first); failures
-- count consecutive errors, which push next_poll_at back exponentially.
CREATE TABLE git_polls (
  repository_id TEXT PRIMARY KEY REFERENCES repositories(id) ON DELETE CASCADE,
  heads TEXT,
  next_poll_at INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_until INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  last_polled_at INTEGER
);

-- migration 9: schedules, notifications, badges and retention
-- Scheduled builds (docs/operations.md "Scheduled builds"). next_slot_at is the next time the
-- schedule is due; a daemon that finds it due builds the latest slot at or before now (one build
-- after downtime, however many slots were missed) and records the slot in schedule_runs, whose
-- primary key lets exactly one process fire each slot.
CREATE TABLE pipeline_schedules (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  cron TEXT NOT NULL,
  timezone TEXT NOT NULL,
  branch TEXT NOT NULL,
  build_when_unchanged INTEGER NOT NULL DEFAULT 1,
  enabled INTEGER NOT NULL DEFAULT 1,
  next_slot_at INTEGER NOT NULL,
  last_built_sha TEXT,
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX pipeline_schedules_pipeline ON pipeline_schedules (pipeline_id);
CREATE INDEX pipeline_schedules_due ON pipeline_schedules (enabled, next_slot_at);
CREATE TABLE schedule_runs (
  schedule_id TEXT NOT NULL REFERENCES pipeline_schedules(id) ON DELETE CASCADE,
  slot_at INTEGER NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('built', 'unchanged', 'failed')),
  build_id TEXT REFERENCES builds(id) ON DELETE SET NULL,
  commit_sha TEXT,
  error TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (schedule_id, slot_at)
);
-- SQLite cannot widen the trigger_type CHECK in place, and rebuilding builds inside a migration's
-- transaction would let DROP TABLE cascade into its jobs, logs and artifacts (foreign keys cannot
-- be switched off inside a transaction: https://www.sqlite.org/foreignkeys.html section 2). So a
-- scheduled build is stored with trigger_type 'manual' and trigger_event 'schedule', and the API
-- reports trigger_type 'schedule' (lib/builds/store.ts); schedule_id names the schedule.
ALTER TABLE builds ADD COLUMN schedule_id TEXT REFERENCES pipeline_schedules(id) ON DELETE SET NULL;

-- Notifications (docs/notifications.md). Non-secret channel settings are plain JSON; the secret
-- ones (webhook URLs, signing secrets, SMTP passwords) are sealed with the secret box.
CREATE TABLE notifications (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  channel TEXT NOT NULL CHECK (channel IN ('slack', 'webhook', 'email')),
  events TEXT NOT NULL,
  branches TEXT NOT NULL DEFAULT '[]',
  config TEXT NOT NULL DEFAULT '{}',
  secrets_sealed TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX notifications_project ON notifications (project_id);
-- The outbox: a row for every build that reaches a final status, written by this trigger in the
-- same transaction as the status change, whatever code path made it. previous_status is the
-- status of the pipeline's previous finished (succeeded or failed) build on the same branch, which
-- tells a fix from a plain success.
CREATE TABLE notification_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  status TEXT NOT NULL,
  previous_status TEXT,
  created_at INTEGER NOT NULL
);
CREATE TRIGGER builds_notification_outbox AFTER UPDATE OF status ON builds
  WHEN NEW.status IN ('succeeded', 'failed', 'canceled') AND OLD.status IS NOT NEW.status
  BEGIN INSERT INTO notification_outbox (build_id, status, previous_status, created_at) VALUES (NEW.id, NEW.status, (SELECT b.status FROM builds b WHERE b.pipeline_id = NEW.pipeline_id AND b.branch = NEW.branch AND b.build_number < NEW.build_number AND b.status IN ('succeeded', 'failed') ORDER BY b.build_number DESC LIMIT 1), NEW.updated_at); END;
CREATE TABLE notification_deliveries (
  id TEXT PRIMARY KEY,
  notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  event TEXT NOT NULL CHECK (event IN ('failed', 'fixed', 'succeeded', 'canceled')),
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER,
  UNIQUE (notification_id, build_id, event)
);
CREATE INDEX notification_deliveries_due ON notification_deliveries (status, next_attempt_at);
CREATE INDEX notification_deliveries_notification ON notification_deliveries (notification_id, created_at);

-- Per-project operation settings: public status badges (off by default) and retention overrides
-- (NULL: the instance default, README "Configuration").
CREATE TABLE project_operation_settings (
  project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  public_badges INTEGER NOT NULL DEFAULT 0,
  log_retention_days INTEGER,
  artifact_retention_days INTEGER,
  keep_builds INTEGER,
  updated_at INTEGER NOT NULL
);
-- Retention (docs/operations.md "Retention"): when a build's logs and artifacts were deleted.
ALTER TABLE builds ADD COLUMN logs_deleted_at INTEGER;
ALTER TABLE builds ADD COLUMN artifacts_deleted_at INTEGER;
CREATE INDEX builds_pipeline_number ON builds (pipeline_id, build_number);
CREATE INDEX builds_pipeline_branch_status ON builds (pipeline_id, branch, status, build_number);

-- migration 10: project and pipeline variables and secrets
-- Variables a build receives (docs/secrets.md): a project's (pipeline_id NULL) or one pipeline's,
-- plain or secret, a value or a file (base64 of its bytes). A secret's value is sealed with the
-- secret box and never returned. protected_refs (JSON list of branch/tag patterns, empty for
-- all) limits a variable to builds of matching refs that are not pull requests. The empty
-- string stands for "the project" in scope_key, so UNIQUE holds for project variables too.
CREATE TABLE variables (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  pipeline_id TEXT REFERENCES pipelines(id) ON DELETE CASCADE,
  scope_key TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  secret INTEGER NOT NULL DEFAULT 0,
  file INTEGER NOT NULL DEFAULT 0,
  protected_refs TEXT NOT NULL DEFAULT '[]',
  created_by TEXT REFERENCES users(id) ON DELETE SET NULL,
  updated_by TEXT REFERENCES users(id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, scope_key, key)
);
-- Who changed which variable, when (never its value). Kept when the variable is deleted; goes
-- with its project.
CREATE TABLE variable_changes (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  pipeline_id TEXT,
  key TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('created', 'updated', 'deleted')),
  secret INTEGER NOT NULL,
  file INTEGER NOT NULL,
  actor_id TEXT REFERENCES users(id) ON DELETE SET NULL,
  actor TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL
);
CREATE INDEX variable_changes_project ON variable_changes (project_id, created_at);

-- migration 11: pipeline definition source
-- Which definition a build used (docs/pipelines.md): {"source":"api"}, or {"source":"file","path":
-- "roost.yaml","commit_sha":"…"} (plus "branch" when a fork's pull request used its target
-- branch's file). Builds from before the pipeline file was read used the API's definition.
ALTER TABLE builds ADD COLUMN definition_source TEXT NOT NULL DEFAULT '{"source":"api"}';

-- migration 12: the Flutter SDK a build used
-- As its runner reported it with the job's finish (docs/runners.md "Flutter versions"):
-- {"requested":"3.27.1","version":"3.27.1","source":"installed|reused|path|sdks_dir","revision":"…"};
-- NULL for builds that never reached it, and for builds from before.
ALTER TABLE builds ADD COLUMN flutter_sdk TEXT;

-- migration 13: retention finds what is left to clean without reading what it cleaned
-- Each retention batch asks a pipeline for its finished builds whose logs or artifacts are still
-- kept; without this index it read every build of the pipeline again, cleaned or not, so a full
-- pass slowed down with the square of the build count (docs/benchmarks.md).
CREATE INDEX builds_retention_pending ON builds (pipeline_id, build_number) WHERE logs_deleted_at IS NULL OR artifacts_deleted_at IS NULL;

-- migration 14: the newest build change, found without reading every build
-- GET /v1/events asks each daemon process, while any event stream is open there, every second or
-- two for the builds changed since its last look (changes made through another process on the
-- same database); without this index each look read the whole builds table.
CREATE INDEX builds_updated_at ON builds (updated_at);

-- migration 15: schedules from the pipeline file
-- Where a schedule comes from (docs/pipelines.md "Schedules"): 'api' (created through the API) or
-- 'file' (a pipeline file's `schedules`, synced from each valid file pushed to the project's default
-- branch; read-only through the API). config_path names the file a file schedule came from.
ALTER TABLE pipeline_schedules ADD COLUMN source TEXT NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'file'));
ALTER TABLE pipeline_schedules ADD COLUMN config_path TEXT;

-- migration 16: Bitbucket Cloud
-- Integrations, catalogue entries and deliveries may also be Bitbucket Cloud ('bitbucket',
-- docs/any-git.md). The CHECKs are widened by rebuilding the three tables as migration 8 did.
-- Dropping `repositories` now also cascades into git_polls (ON DELETE CASCADE,
-- https://www.sqlite.org/lang_droptable.html: the implicit DELETE runs the foreign key actions), so
-- its rows are copied first and put back once the repositories they name are back.
PRAGMA defer_foreign_keys = ON;
CREATE TABLE integrations_copy AS SELECT * FROM integrations;
CREATE TABLE repositories_copy AS SELECT * FROM repositories;
CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries;
CREATE TABLE git_polls_copy AS SELECT * FROM git_polls;
DROP TABLE repositories;
DROP TABLE integrations;
DROP TABLE webhook_deliveries;
CREATE TABLE integrations (
  id TEXT PRIMARY KEY,
  provider TEXT NOT NULL CHECK (provider IN ('github', 'gitlab', 'gitea', 'git', 'bitbucket')),
  name TEXT NOT NULL,
  api_url TEXT NOT NULL,
  web_url TEXT NOT NULL,
  app_id TEXT,
  installation_id TEXT,
  credentials_sealed TEXT NOT NULL,
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_synced_at INTEGER,
  last_sync_error TEXT
);
INSERT INTO integrations (id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_by, created_at, updated_at, last_synced_at, last_sync_error)
  SELECT id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_by, created_at, updated_at, last_synced_at, last_sync_error FROM integrations_copy;
CREATE TABLE repositories (
  id TEXT PRIMARY KEY,
  integration_id TEXT NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
  provider TEXT NOT NULL CHECK (provider IN ('github', 'gitlab', 'gitea', 'git', 'bitbucket')),
  external_id TEXT NOT NULL,
  full_name TEXT NOT NULL,
  default_branch TEXT NOT NULL,
  is_private INTEGER NOT NULL DEFAULT 1,
  avatar_url TEXT NOT NULL DEFAULT '',
  installation_id TEXT NOT NULL DEFAULT '',
  host_url TEXT NOT NULL,
  clone_url TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  webhook_token_hash TEXT,
  UNIQUE (integration_id, external_id)
);
INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at, webhook_token_hash)
  SELECT id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at, webhook_token_hash FROM repositories_copy;
CREATE INDEX repositories_full_name ON repositories (full_name);
CREATE INDEX repositories_external ON repositories (provider, external_id);
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL CHECK (host IN ('github', 'gitlab', 'gitea', 'git', 'bitbucket')),
  delivery_id TEXT NOT NULL DEFAULT '',
  event TEXT NOT NULL DEFAULT '',
  action TEXT NOT NULL DEFAULT '',
  verified INTEGER NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('built', 'ignored', 'duplicate', 'rejected')),
  reason TEXT NOT NULL,
  repository_external_id TEXT,
  repository_full_name TEXT,
  repository_id TEXT,
  project_id TEXT,
  commit_sha TEXT,
  decisions TEXT NOT NULL DEFAULT '[]',
  duplicate_of TEXT,
  body TEXT,
  received_at INTEGER NOT NULL,
  body_expires_at INTEGER
);
INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at)
  SELECT id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at FROM webhook_deliveries_copy;
CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, received_at);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
CREATE INDEX webhook_deliveries_rejected ON webhook_deliveries (repository_id, verified, received_at);
DROP TABLE integrations_copy;
DROP TABLE repositories_copy;
DROP TABLE webhook_deliveries_copy;
INSERT INTO git_polls (repository_id, heads, next_poll_at, lease_owner, lease_until, failures, last_error, last_polled_at)
  SELECT repository_id, heads, next_poll_at, lease_owner, lease_until, failures, last_error, last_polled_at FROM git_polls_copy;
DROP TABLE git_polls_copy;

-- migration 17: build lists and counts that cost the same at a million builds
-- Build listings page by cursor (build_number, newest first) on an index per filter, so a page reads
-- only its own rows (docs/api.md "Builds"): the project's and the pipeline's builds by status, by
-- branch and by trigger. The trigger a listing filters on is trigger_type, except that scheduled
-- builds (stored as manual, migration 9) read 'schedule'; the indexes hold that expression.
DROP INDEX builds_pipeline_status;
CREATE INDEX builds_pipeline_status ON builds (pipeline_id, status, build_number);
CREATE INDEX builds_pipeline_branch ON builds (pipeline_id, branch, build_number);
CREATE INDEX builds_pipeline_trigger ON builds (pipeline_id, (CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END), build_number);
CREATE INDEX builds_project_status ON builds (project_id, status, build_number);
CREATE INDEX builds_project_branch ON builds (project_id, branch, build_number);
CREATE INDEX builds_project_trigger ON builds (project_id, (CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END), build_number);
-- Builds per pipeline and status, kept by triggers in the same transaction as every insert, status
-- change and delete of a build (also the cascades of a deleted project or pipeline), so GET /metrics
-- and a listing's opt-in total read a few counters instead of counting builds.
CREATE TABLE build_counts (
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  status TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (pipeline_id, status)
) WITHOUT ROWID;
CREATE INDEX build_counts_project ON build_counts (project_id, status);
INSERT INTO build_counts (pipeline_id, project_id, status, n) SELECT pipeline_id, project_id, status, COUNT(*) FROM builds GROUP BY pipeline_id, status;
CREATE TRIGGER build_counts_insert AFTER INSERT ON builds BEGIN INSERT INTO build_counts (pipeline_id, project_id, status, n) VALUES (NEW.pipeline_id, NEW.project_id, NEW.status, 1) ON CONFLICT (pipeline_id, status) DO UPDATE SET n = n + 1; END;
CREATE TRIGGER build_counts_status AFTER UPDATE OF status ON builds WHEN OLD.status IS NOT NEW.status BEGIN UPDATE build_counts SET n = n - 1 WHERE pipeline_id = OLD.pipeline_id AND status = OLD.status; INSERT INTO build_counts (pipeline_id, project_id, status, n) VALUES (NEW.pipeline_id, NEW.project_id, NEW.status, 1) ON CONFLICT (pipeline_id, status) DO UPDATE SET n = n + 1; END;
CREATE TRIGGER build_counts_delete AFTER DELETE ON builds BEGIN UPDATE build_counts SET n = n - 1 WHERE pipeline_id = OLD.pipeline_id AND status = OLD.status; END;

-- migration 18: failed webhook deliveries
-- A verified delivery Roost could not act on (an unexpected database error while recording its
-- builds, docs/webhooks.md "When Roost cannot act on a delivery") is recorded as 'failed' and
-- answered 5xx so the host redelivers it. The result CHECK is widened by rebuilding the table as
-- the Bitbucket migration did (it has no foreign keys).
CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL CHECK (host IN ('github', 'gitlab', 'gitea', 'git', 'bitbucket')),
  delivery_id TEXT NOT NULL DEFAULT '',
  event TEXT NOT NULL DEFAULT '',
  action TEXT NOT NULL DEFAULT '',
  verified INTEGER NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('built', 'ignored', 'duplicate', 'rejected', 'failed')),
  reason TEXT NOT NULL,
  repository_external_id TEXT,
  repository_full_name TEXT,
  repository_id TEXT,
  project_id TEXT,
  commit_sha TEXT,
  decisions TEXT NOT NULL DEFAULT '[]',
  duplicate_of TEXT,
  body TEXT,
  received_at INTEGER NOT NULL,
  body_expires_at INTEGER
);
INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at)
  SELECT id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at FROM webhook_deliveries_copy;
CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, received_at);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
CREATE INDEX webhook_deliveries_rejected ON webhook_deliveries (repository_id, verified, received_at);
DROP TABLE webhook_deliveries_copy;

-- migration 19: stream tokens name the credential that minted them
-- An open log stream ends when the session or API token behind its stream token stops working
-- (docs/runners.md "Live logs"). Exactly one of the two is set. Tokens minted before (each good
-- for 60 seconds) name neither and are dropped: a client mints a new one.
DELETE FROM stream_tokens;
ALTER TABLE stream_tokens ADD COLUMN session_id TEXT;
ALTER TABLE stream_tokens ADD COLUMN api_token_id TEXT;

-- migration 20: test results
-- Test reports a runner uploads after a build's steps (docs/test-results.md), one row each with
-- what reading it found: read whole, read in part (cut short, over a bound) or not read at all.
CREATE TABLE test_reports (
  id TEXT PRIMARY KEY,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  job_id TEXT NOT NULL,
  path TEXT NOT NULL,
  format TEXT,
  status TEXT NOT NULL CHECK (status IN ('read', 'partial', 'rejected')),
  problems TEXT NOT NULL DEFAULT '[]',
  bytes INTEGER NOT NULL,
  cases INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  UNIQUE (build_id, path)
);

-- A test's identity in a pipeline: its suite and name, hashed into test_key, so one test's history
-- is one range of test_results_history however many results are stored. The counters serve the
-- flaky-test list without reading results: runs and failures (failed or error) of every build,
-- flaky_runs of the results that disagreed with another build of the same commit.
CREATE TABLE tests (
  id INTEGER PRIMARY KEY,
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  test_key TEXT NOT NULL,
  suite TEXT NOT NULL,
  name TEXT NOT NULL,
  runs INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  flaky_runs INTEGER NOT NULL DEFAULT 0,
  last_flaky_at INTEGER,
  last_flaky_build_id TEXT,
  first_seen_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  UNIQUE (pipeline_id, test_key)
);
CREATE INDEX tests_flaky ON tests (pipeline_id, last_flaky_at) WHERE last_flaky_at IS NOT NULL;

-- One test's result in one build. lane is the line of builds the result belongs to: the branch of
-- a push (or manual, scheduled) build, "pr:<number>" for a pull request's builds, whose branch is
-- their target branch; a test's history is read per lane.
CREATE TABLE test_results (
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  test_id INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
  lane TEXT NOT NULL,
  build_number INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error', 'skipped')),
  flaky INTEGER NOT NULL DEFAULT 0,
  duration_ms INTEGER,
  message TEXT,
  stack TEXT,
  output TEXT,
  file TEXT,
  line INTEGER,
  PRIMARY KEY (build_id, seq)
);
CREATE INDEX test_results_history ON test_results (test_id, lane, build_number);

-- Per build: the counts every list shows, the coverage total, and the keys that find the build
-- to compare with (the same commit for flaky tests; the same lane for coverage and history).
CREATE TABLE build_test_summaries (
  build_id TEXT PRIMARY KEY REFERENCES builds(id) ON DELETE CASCADE,
  pipeline_id TEXT NOT NULL,
  lane TEXT NOT NULL,
  commit_sha TEXT NOT NULL,
  build_number INTEGER NOT NULL,
  total INTEGER NOT NULL DEFAULT 0,
  passed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  errored INTEGER NOT NULL DEFAULT 0,
  skipped INTEGER NOT NULL DEFAULT 0,
  flaky INTEGER NOT NULL DEFAULT 0,
  duration_ms INTEGER NOT NULL DEFAULT 0,
  lines_found INTEGER,
  lines_hit INTEGER,
  annotations INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL
);
CREATE INDEX build_test_summaries_commit ON build_test_summaries (pipeline_id, commit_sha);
CREATE INDEX build_test_summaries_lane ON build_test_summaries (pipeline_id, lane, build_number);

-- Line coverage per file (lcov), and analyzer issues as annotations, per build.
CREATE TABLE coverage_files (
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  lines_found INTEGER NOT NULL,
  lines_hit INTEGER NOT NULL,
  PRIMARY KEY (build_id, path)
);
CREATE TABLE build_annotations (
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  severity TEXT NOT NULL CHECK (severity IN ('error', 'warning', 'notice')),
  file TEXT NOT NULL,
  line INTEGER NOT NULL,
  col INTEGER,
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (build_id, seq)
);

-- migration 21: the runner claim in O(log n), in queue order
-- A claim hands out the oldest queued build a runner may take whose pipeline has a free slot
-- (lib/runners/jobs.ts). Builds are ordered by queue_seq, a number taken from build_queue_sequence when
-- the build is created (queued_at has whole seconds only; a released build keeps its place). What
-- decides who may take a build is fixed at creation: runner_route, the Apple platforms and the
-- runner labels it needs (lib/runners/routing.ts), and own_max_concurrent, the max_concurrent of
-- the pipeline file it was defined by (0: the pipeline's current one). Queued builds of one
-- pipeline, route and limit form a group that only ever hands out its oldest; build_queue_groups
-- lists the groups that have queued builds, kept by triggers in each build change's transaction,
-- so a claim reads one head per group through builds_queue instead of every queued build.
ALTER TABLE builds ADD COLUMN queue_seq INTEGER;
ALTER TABLE builds ADD COLUMN runner_route TEXT NOT NULL DEFAULT '{"apple":[],"labels":[]}';
ALTER TABLE builds ADD COLUMN own_max_concurrent INTEGER NOT NULL DEFAULT 0;
UPDATE builds SET
  runner_route = json_object(
    'apple', json(COALESCE((SELECT json_group_array(p.value) FROM json_each(builds.config_snapshot, '$.execution_config.platforms') p WHERE p.value IN ('ios', 'macos')), '[]')),
    'labels', json(COALESCE(json_extract(config_snapshot, '$.execution_config.runner_labels'), '[]'))),
  own_max_concurrent = CASE WHEN json_extract(definition_source, '$.source') = 'file' THEN COALESCE(json_extract(config_snapshot, '$.concurrency.max_concurrent'), 0) ELSE 0 END
  WHERE status IN ('queued', 'running');
UPDATE builds SET queue_seq = o.n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY queued_at, build_number) AS n FROM builds WHERE status IN ('queued', 'running')) o WHERE builds.id = o.id;
CREATE TABLE build_queue_sequence (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  next INTEGER NOT NULL
);
INSERT INTO build_queue_sequence (id, next) SELECT 1, COALESCE(MAX(queue_seq), 0) + 1 FROM builds;
CREATE INDEX builds_queue ON builds (pipeline_id, runner_route, own_max_concurrent, queue_seq) WHERE status = 'queued';
CREATE TABLE build_queue_groups (
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  runner_route TEXT NOT NULL,
  own_max_concurrent INTEGER NOT NULL,
  queued INTEGER NOT NULL,
  PRIMARY KEY (pipeline_id, runner_route, own_max_concurrent)
) WITHOUT ROWID;
INSERT INTO build_queue_groups (pipeline_id, runner_route, own_max_concurrent, queued) SELECT pipeline_id, runner_route, own_max_concurrent, COUNT(*) FROM builds WHERE status = 'queued' GROUP BY pipeline_id, runner_route, own_max_concurrent;
CREATE TRIGGER build_queue_insert AFTER INSERT ON builds WHEN NEW.status = 'queued' BEGIN INSERT INTO build_queue_groups (pipeline_id, runner_route, own_max_concurrent, queued) VALUES (NEW.pipeline_id, NEW.runner_route, NEW.own_max_concurrent, 1) ON CONFLICT DO UPDATE SET queued = queued + 1; END;
CREATE TRIGGER build_queue_enter AFTER UPDATE OF status ON builds WHEN NEW.status = 'queued' AND OLD.status IS NOT 'queued' BEGIN INSERT INTO build_queue_groups (pipeline_id, runner_route, own_max_concurrent, queued) VALUES (NEW.pipeline_id, NEW.runner_route, NEW.own_max_concurrent, 1) ON CONFLICT DO UPDATE SET queued = queued + 1; END;
CREATE TRIGGER build_queue_leave AFTER UPDATE OF status ON builds WHEN OLD.status = 'queued' AND NEW.status IS NOT 'queued' BEGIN UPDATE build_queue_groups SET queued = queued - 1 WHERE pipeline_id = OLD.pipeline_id AND runner_route = OLD.runner_route AND own_max_concurrent = OLD.own_max_concurrent; DELETE FROM build_queue_groups WHERE pipeline_id = OLD.pipeline_id AND runner_route = OLD.runner_route AND own_max_concurrent = OLD.own_max_concurrent AND queued <= 0; END;
CREATE TRIGGER build_queue_delete AFTER DELETE ON builds WHEN OLD.status = 'queued' BEGIN UPDATE build_queue_groups SET queued = queued - 1 WHERE pipeline_id = OLD.pipeline_id AND runner_route = OLD.runner_route AND own_max_concurrent = OLD.own_max_concurrent; DELETE FROM build_queue_groups WHERE pipeline_id = OLD.pipeline_id AND runner_route = OLD.runner_route AND own_max_concurrent = OLD.own_max_concurrent AND queued <= 0; END;

-- migration 22: GitHub check runs
-- One check run per finished build that sent test reports, on a GitHub repository (Checks API,
-- docs/github.md "Check runs"): created with the build's test summary and its annotations, retried
-- with backoff like commit statuses until done.
CREATE TABLE check_run_reports (
  build_id TEXT PRIMARY KEY REFERENCES builds(id) ON DELETE CASCADE,
  check_run_id TEXT,
  done INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  updated_at INTEGER NOT NULL
);

-- migration 23: environments and deployments
-- Where a project publishes builds (docs/publishing.md): each environment may require a
-- person's approval before anything is published to it, names who may approve (approvers: user
-- ids; [] means the project's maintainers) and which refs may publish to it (allowed_refs:
-- patterns as a variable's protected_refs, lib/pipelines/branch-patterns.ts; [] means any ref). Its secrets
-- are variables with environment_id set: given only to a publish to this environment.
CREATE TABLE environments (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  requires_approval INTEGER NOT NULL DEFAULT 0,
  approvers TEXT NOT NULL DEFAULT '[]',
  allowed_refs TEXT NOT NULL DEFAULT '[]',
  created_by TEXT REFERENCES users(id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, name)
);
ALTER TABLE variables ADD COLUMN environment_id TEXT REFERENCES environments(id) ON DELETE CASCADE;
ALTER TABLE variable_changes ADD COLUMN environment_id TEXT;

-- One publish of one build's artifacts by one publisher to one environment: created when the
-- build succeeds (trigger 'build'), by a promotion of an earlier build ('promotion') or a retry
-- ('retry'). publisher is the publisher's configuration as frozen; artifacts the files it sends
-- with their SHA-256, which the runner verifies before anything leaves it. A runner holds a
-- running deployment by a lease, as it holds a job (runner_id, claim_id, lease_expires_at), and
-- numbers its log lines from next_line in the build's log.
CREATE TABLE deployments (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  environment_id TEXT REFERENCES environments(id) ON DELETE SET NULL,
  environment_name TEXT NOT NULL,
  publisher_name TEXT NOT NULL,
  publisher_type TEXT NOT NULL,
  publisher TEXT NOT NULL,
  target TEXT NOT NULL,
  trigger TEXT NOT NULL CHECK (trigger IN ('build', 'promotion', 'retry')),
  retry_of TEXT REFERENCES deployments(id) ON DELETE SET NULL,
  status TEXT NOT NULL CHECK (status IN ('waiting_approval', 'approved', 'rejected', 'running', 'succeeded', 'failed')),
  requested_by TEXT REFERENCES users(id) ON DELETE SET NULL,
  requested_by_email TEXT NOT NULL DEFAULT '',
  decided_by TEXT REFERENCES users(id) ON DELETE SET NULL,
  decided_by_email TEXT,
  decided_at INTEGER,
  artifacts TEXT NOT NULL DEFAULT '[]',
  release_notes TEXT NOT NULL DEFAULT '{}',
  store_answer TEXT,
  failure_reason TEXT,
  runner_id TEXT REFERENCES runners(id) ON DELETE SET NULL,
  claim_id TEXT,
  lease_expires_at INTEGER,
  next_line INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER
);
CREATE INDEX deployments_build ON deployments (build_id, created_at);
CREATE INDEX deployments_project ON deployments (project_id, created_at);
CREATE INDEX deployments_environment ON deployments (project_id, environment_name, created_at);
CREATE INDEX deployments_approved ON deployments (status, created_at) WHERE status IN ('approved', 'running');
CREATE UNIQUE INDEX deployments_claim ON deployments (runner_id, claim_id) WHERE claim_id IS NOT NULL;

-- migration 24: commit statuses as an outbox, one row per commit and pipeline
-- What each host should show for a commit and pipeline (docs/webhooks.md "Commit statuses"): the
-- newest build's status, written by triggers in the same transaction as the build's change, so
-- nothing is lost on a crash and only the latest state is ever sent (a build that was queued,
-- started and finished before the reporter came by is sent once, as finished). `version` counts
-- the changes, `sent_version` the one the host has; a reporter claims due rows (claimed_by,
-- claimed_until) so two daemon processes never send the same one, and records failures with
-- their retry time (a host's rate limit, or backoff). Plain git remotes have no statuses.
CREATE TABLE commit_status_outbox (
  repository_id TEXT NOT NULL,
  commit_sha TEXT NOT NULL,
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  build_number INTEGER NOT NULL,
  status TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  sent_version INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  claimed_by TEXT,
  claimed_until INTEGER,
  last_error TEXT,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (repository_id, commit_sha, pipeline_id)
);
CREATE INDEX commit_status_outbox_due ON commit_status_outbox (next_attempt_at) WHERE version != sent_version;
CREATE INDEX commit_status_outbox_build ON commit_status_outbox (build_id);
CREATE INDEX commit_status_outbox_updated ON commit_status_outbox (updated_at);
-- The recent builds' states carry over: what was reported stays reported, the rest is due.
INSERT INTO commit_status_outbox (repository_id, commit_sha, pipeline_id, build_id, build_number, status, version, sent_version, attempts, next_attempt_at, last_error, updated_at)
  SELECT p.repository_id, b.commit_sha, b.pipeline_id, b.id, b.build_number, b.status, 1, CASE WHEN c.reported_status IS b.status THEN 1 ELSE 0 END, COALESCE(c.attempts, 0), COALESCE(c.next_attempt_at, 0), c.last_error, b.updated_at
  FROM builds b JOIN projects p ON p.id = b.project_id JOIN repositories r ON r.id = p.repository_id LEFT JOIN commit_status_reports c ON c.build_id = b.id
  WHERE r.provider != 'git' AND b.updated_at >= (SELECT MAX(updated_at) FROM builds) - 86400
  ORDER BY b.build_number
  ON CONFLICT (repository_id, commit_sha, pipeline_id) DO UPDATE SET build_id = excluded.build_id, build_number = excluded.build_number, status = excluded.status, sent_version = excluded.sent_version, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error, updated_at = excluded.updated_at;
DROP TABLE commit_status_reports;
CREATE TRIGGER commit_status_outbox_insert AFTER INSERT ON builds BEGIN INSERT INTO commit_status_outbox (repository_id, commit_sha, pipeline_id, build_id, build_number, status, updated_at) SELECT p.repository_id, NEW.commit_sha, NEW.pipeline_id, NEW.id, NEW.build_number, NEW.status, NEW.updated_at FROM projects p JOIN repositories r ON r.id = p.repository_id WHERE p.id = NEW.project_id AND r.provider != 'git' ON CONFLICT (repository_id, commit_sha, pipeline_id) DO UPDATE SET build_id = excluded.build_id, build_number = excluded.build_number, status = excluded.status, version = version + 1, updated_at = excluded.updated_at WHERE excluded.build_number >= commit_status_outbox.build_number; END;
CREATE TRIGGER commit_status_outbox_status AFTER UPDATE OF status ON builds WHEN OLD.status IS NOT NEW.status BEGIN UPDATE commit_status_outbox SET status = NEW.status, version = version + 1, updated_at = NEW.updated_at WHERE build_id = NEW.id; END;

-- migration 25: where a build ran
-- The runner reports its executor with the job's finish: host, or a container with the image by
-- digest (a re-run pins it), network and limits, or why the container could not start
-- (docs/runners.md "Executors"). JSON, NULL for builds before it and for lost jobs.
ALTER TABLE builds ADD COLUMN executor TEXT;

-- migration 26: build counts by trigger and by branch
-- A listing's include=total reads counters for every filter it offers, so no request counts
-- builds: build_counts (migration 17) is kept per pipeline, status and trigger (the listed trigger:
-- 'schedule' for scheduled builds), and build_branch_counts per pipeline, branch, status and
-- trigger, both by the same triggers in each build change's transaction.
DROP TRIGGER build_counts_insert;
DROP TRIGGER build_counts_status;
DROP TRIGGER build_counts_delete;
DROP TABLE build_counts;
CREATE TABLE build_counts (
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  status TEXT NOT NULL,
  trigger_kind TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (pipeline_id, status, trigger_kind)
) WITHOUT ROWID;
CREATE INDEX build_counts_project ON build_counts (project_id, status, trigger_kind);
CREATE TABLE build_branch_counts (
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  branch TEXT NOT NULL,
  status TEXT NOT NULL,
  trigger_kind TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (pipeline_id, branch, status, trigger_kind)
) WITHOUT ROWID;
CREATE INDEX build_branch_counts_project ON build_branch_counts (project_id, branch, status, trigger_kind);
INSERT INTO build_counts (pipeline_id, project_id, status, trigger_kind, n)
  SELECT pipeline_id, project_id, status, CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END, COUNT(*) FROM builds GROUP BY 1, 3, 4;
INSERT INTO build_branch_counts (pipeline_id, project_id, branch, status, trigger_kind, n)
  SELECT pipeline_id, project_id, branch, status, CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END, COUNT(*) FROM builds GROUP BY 1, 3, 4, 5;
CREATE TRIGGER build_counts_insert AFTER INSERT ON builds BEGIN INSERT INTO build_counts (pipeline_id, project_id, status, trigger_kind, n) VALUES (NEW.pipeline_id, NEW.project_id, NEW.status, CASE WHEN NEW.trigger_event = 'schedule' THEN 'schedule' ELSE NEW.trigger_type END, 1) ON CONFLICT DO UPDATE SET n = n + 1; INSERT INTO build_branch_counts (pipeline_id, project_id, branch, status, trigger_kind, n) VALUES (NEW.pipeline_id, NEW.project_id, NEW.branch, NEW.status, CASE WHEN NEW.trigger_event = 'schedule' THEN 'schedule' ELSE NEW.trigger_type END, 1) ON CONFLICT DO UPDATE SET n = n + 1; END;
CREATE TRIGGER build_counts_status AFTER UPDATE OF status ON builds WHEN OLD.status IS NOT NEW.status BEGIN UPDATE build_counts SET n = n - 1 WHERE pipeline_id = OLD.pipeline_id AND status = OLD.status AND trigger_kind = CASE WHEN OLD.trigger_event = 'schedule' THEN 'schedule' ELSE OLD.trigger_type END; INSERT INTO build_counts (pipeline_id, project_id, status, trigger_kind, n) VALUES (NEW.pipeline_id, NEW.project_id, NEW.status, CASE WHEN NEW.trigger_event = 'schedule' THEN 'schedule' ELSE NEW.trigger_type END, 1) ON CONFLICT DO UPDATE SET n = n + 1; UPDATE build_branch_counts SET n = n - 1 WHERE pipeline_id = OLD.pipeline_id AND branch = OLD.branch AND status = OLD.status AND trigger_kind = CASE WHEN OLD.trigger_event = 'schedule' THEN 'schedule' ELSE OLD.trigger_type END; INSERT INTO build_branch_counts (pipeline_id, project_id, branch, status, trigger_kind, n) VALUES (NEW.pipeline_id, NEW.project_id, NEW.branch, NEW.status, CASE WHEN NEW.trigger_event = 'schedule' THEN 'schedule' ELSE NEW.trigger_type END, 1) ON CONFLICT DO UPDATE SET n = n + 1; END;
CREATE TRIGGER build_counts_delete AFTER DELETE ON builds BEGIN UPDATE build_counts SET n = n - 1 WHERE pipeline_id = OLD.pipeline_id AND status = OLD.status AND trigger_kind = CASE WHEN OLD.trigger_event = 'schedule' THEN 'schedule' ELSE OLD.trigger_type END; UPDATE build_branch_counts SET n = n - 1 WHERE pipeline_id = OLD.pipeline_id AND branch = OLD.branch AND status = OLD.status AND trigger_kind = CASE WHEN OLD.trigger_event = 'schedule' THEN 'schedule' ELSE OLD.trigger_type END; END;

-- migration 27: a page of several build filters reads only its index
-- The listed trigger (migration 17's expression) becomes a column a query can name, trigger_kind
-- (virtual: computed, never stored in the row). Each listing index now also holds the other
-- filters after build_number, so a page with several filters checks them on the index entries of
-- its range without reading the builds (docs/api.md "Builds": at most 1,000 a page).
ALTER TABLE builds ADD COLUMN trigger_kind TEXT GENERATED ALWAYS AS (CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END) VIRTUAL;
DROP INDEX builds_pipeline_status;
DROP INDEX builds_pipeline_branch;
DROP INDEX builds_pipeline_trigger;
DROP INDEX builds_pipeline_branch_status;
DROP INDEX builds_project_status;
DROP INDEX builds_project_branch;
DROP INDEX builds_project_trigger;
CREATE INDEX builds_pipeline_status ON builds (pipeline_id, status, build_number, branch, trigger_kind);
CREATE INDEX builds_pipeline_branch ON builds (pipeline_id, branch, build_number, status, trigger_kind);
CREATE INDEX builds_pipeline_trigger ON builds (pipeline_id, trigger_kind, build_number, status, branch);
CREATE INDEX builds_pipeline_branch_status ON builds (pipeline_id, branch, status, build_number, trigger_kind);
CREATE INDEX builds_project_status ON builds (project_id, status, build_number, branch, trigger_kind);
CREATE INDEX builds_project_branch ON builds (project_id, branch, build_number, status, trigger_kind);
CREATE INDEX builds_project_trigger ON builds (project_id, trigger_kind, build_number, status, branch);

-- migration 28: the forge's name is the registry's to check
-- integrations.provider, repositories.provider and webhook_deliveries.host name a forge of
-- lib/forges/registry.ts, which checks the name where one is written (the create body); the
-- tables no longer list the forges, so adding one rebuilds nothing. This is the last rebuild for
-- that: the three tables are rebuilt as migration 16 did, without `CHECK (provider IN …)` and
-- `CHECK (host IN …)`, with every row, index and foreign key; the result CHECK of deliveries
-- stays. Dropping `repositories` cascades into git_polls (ON DELETE CASCADE,
-- https://www.sqlite.org/lang_droptable.html), so its rows are copied first and put back once the
-- repositories they name are back; the projects naming a repository are checked at commit
-- (defer_foreign_keys). No trigger is on these tables; the triggers on builds that read
-- repositories find the new table by name.
PRAGMA defer_foreign_keys = ON;
CREATE TABLE integrations_copy AS SELECT * FROM integrations;
CREATE TABLE repositories_copy AS SELECT * FROM repositories;
CREATE TABLE webhook_deliveries_copy AS SELECT * FROM webhook_deliveries;
CREATE TABLE git_polls_copy AS SELECT * FROM git_polls;
DROP TABLE repositories;
DROP TABLE integrations;
DROP TABLE webhook_deliveries;
CREATE TABLE integrations (
  id TEXT PRIMARY KEY,
  provider TEXT NOT NULL,
  name TEXT NOT NULL,
  api_url TEXT NOT NULL,
  web_url TEXT NOT NULL,
  app_id TEXT,
  installation_id TEXT,
  credentials_sealed TEXT NOT NULL,
  created_by TEXT REFERENCES users(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_synced_at INTEGER,
  last_sync_error TEXT
);
INSERT INTO integrations (id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_by, created_at, updated_at, last_synced_at, last_sync_error)
  SELECT id, provider, name, api_url, web_url, app_id, installation_id, credentials_sealed, created_by, created_at, updated_at, last_synced_at, last_sync_error FROM integrations_copy;
CREATE TABLE repositories (
  id TEXT PRIMARY KEY,
  integration_id TEXT NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
  provider TEXT NOT NULL,
  external_id TEXT NOT NULL,
  full_name TEXT NOT NULL,
  default_branch TEXT NOT NULL,
  is_private INTEGER NOT NULL DEFAULT 1,
  avatar_url TEXT NOT NULL DEFAULT '',
  installation_id TEXT NOT NULL DEFAULT '',
  host_url TEXT NOT NULL,
  clone_url TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  webhook_token_hash TEXT,
  UNIQUE (integration_id, external_id)
);
INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at, webhook_token_hash)
  SELECT id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at, webhook_token_hash FROM repositories_copy;
CREATE INDEX repositories_full_name ON repositories (full_name);
CREATE INDEX repositories_external ON repositories (provider, external_id);
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  delivery_id TEXT NOT NULL DEFAULT '',
  event TEXT NOT NULL DEFAULT '',
  action TEXT NOT NULL DEFAULT '',
  verified INTEGER NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('built', 'ignored', 'duplicate', 'rejected', 'failed')),
  reason TEXT NOT NULL,
  repository_external_id TEXT,
  repository_full_name TEXT,
  repository_id TEXT,
  project_id TEXT,
  commit_sha TEXT,
  decisions TEXT NOT NULL DEFAULT '[]',
  duplicate_of TEXT,
  body TEXT,
  received_at INTEGER NOT NULL,
  body_expires_at INTEGER
);
INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at)
  SELECT id, host, delivery_id, event, action, verified, result, reason, repository_external_id, repository_full_name, repository_id, project_id, commit_sha, decisions, duplicate_of, body, received_at, body_expires_at FROM webhook_deliveries_copy;
CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, received_at);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
CREATE INDEX webhook_deliveries_rejected ON webhook_deliveries (repository_id, verified, received_at);
DROP TABLE integrations_copy;
DROP TABLE repositories_copy;
DROP TABLE webhook_deliveries_copy;
DELETE FROM git_polls;
INSERT INTO git_polls (repository_id, heads, next_poll_at, lease_owner, lease_until, failures, last_error, last_polled_at)
  SELECT repository_id, heads, next_poll_at, lease_owner, lease_until, failures, last_error, last_polled_at FROM git_polls_copy;
DROP TABLE git_polls_copy;

-- migration 29: approvers hear of a deployment waiting for approval
-- (docs/notifications.md "Approvals"). As for a build's end, a trigger writes an outbox row in the
-- same transaction that creates a waiting deployment (after a build, a promotion or a retry), and
-- the dispatcher turns it into deliveries of the notifications that want `approval_requested`.
-- notification_deliveries is rebuilt to take that event and name the deployment: deployment_id
-- is '' for a build's event, so UNIQUE still keeps one delivery per notification, build and event
-- (NULLs would be distinct); a deployment goes with its build (ON DELETE CASCADE of build_id).
CREATE TABLE deployment_notification_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  deployment_id TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL
);
CREATE TRIGGER deployments_approval_outbox AFTER INSERT ON deployments WHEN NEW.status = 'waiting_approval'
  BEGIN INSERT INTO deployment_notification_outbox (deployment_id, created_at) VALUES (NEW.id, NEW.created_at); END;
CREATE TABLE notification_deliveries_copy AS SELECT * FROM notification_deliveries;
DROP TABLE notification_deliveries;
CREATE TABLE notification_deliveries (
  id TEXT PRIMARY KEY,
  notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
  build_id TEXT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  event TEXT NOT NULL CHECK (event IN ('failed', 'fixed', 'succeeded', 'canceled', 'approval_requested')),
  deployment_id TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER,
  UNIQUE (notification_id, build_id, event, deployment_id)
);
INSERT INTO notification_deliveries (id, notification_id, build_id, event, status, attempts, next_attempt_at, last_error, created_at, updated_at, delivered_at)
  SELECT id, notification_id, build_id, event, status, attempts, next_attempt_at, last_error, created_at, updated_at, delivered_at FROM notification_deliveries_copy;
DROP TABLE notification_deliveries_copy;
CREATE INDEX notification_deliveries_due ON notification_deliveries (status, next_attempt_at);
CREATE INDEX notification_deliveries_notification ON notification_deliveries (notification_id, created_at);

-- migration 30: finished build logs archived in the object store
-- The last seq of the lines moved, compressed, to the object store (lib/logs/archive.ts) and
-- deleted from build_logs; NULL while every line is in build_logs.
ALTER TABLE build_log_stats ADD COLUMN archived_seq INTEGER;

-- migration 31: what follows a build's change is written by the code that changes it
-- The notification outbox row of a finished build and the commit status of its commit were written
-- by triggers no TypeScript showed; lib/builds/what-follows.ts writes the same rows, in the same
-- transaction, called by lib/builds/transition.ts (every status change) and lib/builds/create.ts
-- (a new build, and the builds it supersedes). The counters and the claim queue keep their
-- triggers: they are indexes the database maintains, not steps of the product's flow. (The
-- deployment approval outbox of migration 29 keeps its trigger for now.)
DROP TRIGGER builds_notification_outbox;
DROP TRIGGER commit_status_outbox_insert;
DROP TRIGGER commit_status_outbox_status;

-- migration 32: retention reads only the builds due
-- Retention asks each pipeline every 10 s for the builds whose logs or artifacts are past their
-- age (lib/retention/retention.ts). builds_retention_pending (migration 13) is in build order and holds every
-- build whose logs or artifacts are still kept, so finding the old ones read all the recent ones
-- too, on the event loop, each time. These two are in finish-time order, one for logs still kept
-- and one for artifacts still kept: the builds past an age are the start of a range.
CREATE INDEX builds_logs_kept ON builds (pipeline_id, COALESCE(finished_at, updated_at)) WHERE logs_deleted_at IS NULL;
CREATE INDEX builds_artifacts_kept ON builds (pipeline_id, COALESCE(finished_at, updated_at)) WHERE artifacts_deleted_at IS NULL;

-- migration 33: a deployment that waits for approval is announced by the code that creates it
-- lib/publishing/plan.ts writes the deployment_notification_outbox row in the deployment's own
-- transaction, as lib/builds/what-follows.ts does for a build (migration 31).
DROP TRIGGER deployments_approval_outbox;

-- migration 34: the API token list is read in its order
-- GET /v1/api-tokens lists by created_at, newest first, then id (lib/auth/api-tokens.ts): read
-- without an index in that order, every token was read and sorted in a temporary B-tree for each
-- page, a cost that grows with the tokens (docs/benchmarks.md "The request path (issue 20)"). The first
-- index serves the list an admin or owner sees; the second, which replaces api_tokens_creator (its
-- first column is the same), the list of one creator's own tokens.
CREATE INDEX api_tokens_created ON api_tokens (created_at, id);
DROP INDEX api_tokens_creator;
CREATE INDEX api_tokens_creator ON api_tokens (created_by, created_at, id);

-- migration 35: the background passes over deployments and logs read only what is waiting
-- The publish claim (lib/publishing/claim.ts) and the host release pass (host-release.ts) ask for
-- the oldest approved deployment of their kind, and whether its project and target has one
-- running; the log archive pass (lib/logs/archive.ts) asks for finished logs not yet in the
-- object store. Each read every deployment or every kept build of the history, every few
-- seconds: these partial indexes hold only what is waiting.
CREATE INDEX deployments_for_runners ON deployments (created_at) WHERE status = 'approved' AND publisher_type != 'host_release';
CREATE INDEX deployments_for_daemon ON deployments (created_at) WHERE status = 'approved' AND publisher_type = 'host_release';
CREATE INDEX deployments_running_target ON deployments (project_id, target) WHERE status = 'running';
CREATE INDEX build_log_stats_unarchived ON build_log_stats (build_id) WHERE archived_seq IS NULL AND last_seq > 0;

-- migration 36: logs retention deleted before they were archived leave the archive pass's index
-- The log archive pass starts from build_log_stats_unarchived (migration 35), the logs not yet in
-- the object store. A log retention deleted before the pass moved it stayed there for good, read
-- by every pass and skipped. Retention now sets archived_seq to 0 (nothing in the store) in the
-- transaction that deletes the log (lib/retention/retention.ts); this does it for those deleted before.
UPDATE build_log_stats SET archived_seq = 0 WHERE archived_seq IS NULL AND build_id IN (SELECT id FROM builds WHERE logs_deleted_at IS NOT NULL);

-- migration 37: dependency caches shared by every runner of a project through the object store
-- One row per saved cache archive (docs/runners.md "Shared caches"): immutable once written, as
-- actions/cache entries are, named by the build's scope (its branch, tag:<tag> or
-- pull_request:<ref>, computed by the daemon from the job's build, never sent by the runner) and
-- the key the runner computed from its lock files. `version` hashes the cache paths and the
-- platform: a fallback restores only an entry of the same version. The archive is the object
-- caches/<project_id>/<id>. No foreign key to projects: a deleted project's entries go with their
-- objects once unused for ROOST_SHARED_CACHE_DAYS (lib/caches/store.ts).
CREATE TABLE cache_entries (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  pipeline_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  version TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER NOT NULL,
  UNIQUE (project_id, scope, key)
);
-- The restore lookup: a project's entries of one version in the scopes a build may read, newest first.
CREATE INDEX cache_entries_restore ON cache_entries (project_id, version, scope, created_at);
-- Eviction: the least recently used first, of all projects (unused for days) or of one (over its size cap).
CREATE INDEX cache_entries_unused ON cache_entries (last_used_at);
CREATE INDEX cache_entries_project_used ON cache_entries (project_id, last_used_at);

-- migration 38: a running total of each project's shared cache bytes
-- A save checks its project against ROOST_SHARED_CACHE_MAX_MB. Summing the project's entries for
-- that read every entry on every save; the total is now kept beside them, in the transaction of
-- each insert and delete (as build_counts keeps builds), so a save under the cap reads one row and
-- one over it reads only the least recently used entries it evicts (lib/caches/store.ts).
CREATE TABLE cache_project_bytes (
  project_id TEXT PRIMARY KEY,
  bytes INTEGER NOT NULL
);
INSERT INTO cache_project_bytes (project_id, bytes) SELECT project_id, SUM(size) FROM cache_entries GROUP BY project_id;
-- (Each trigger on one line: lib/db/migrate.ts splits a block at every line-ending ";".)
CREATE TRIGGER cache_project_bytes_insert AFTER INSERT ON cache_entries BEGIN INSERT INTO cache_project_bytes (project_id, bytes) VALUES (NEW.project_id, NEW.size) ON CONFLICT DO UPDATE SET bytes = bytes + NEW.size; END;
CREATE TRIGGER cache_project_bytes_delete AFTER DELETE ON cache_entries BEGIN UPDATE cache_project_bytes SET bytes = bytes - OLD.size WHERE project_id = OLD.project_id; END;
-- migration 39: one orphan-sweep cursor shared by every daemon
-- The pass that deletes objects no row refers to (lib/object-store/sweep.ts) lists one page of the
-- store after where the previous pass stopped. Each daemon kept its own cursor, so with several
-- daemons on one database each listed the whole bucket. The cursor is now this one row, taken by
-- one daemon for its pass (taken_by, until taken_until: a daemon killed mid-pass lets it go by
-- expiry) and moved on after it.
CREATE TABLE object_sweep (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  prefix INTEGER NOT NULL,
  after_key TEXT,
  taken_by TEXT,
  taken_until INTEGER
);
INSERT INTO object_sweep (id, prefix) VALUES (1, 0);

-- migration 40: one daemon at a time archives a build's log
-- The archive pass (lib/logs/archive.ts) writes a finished build's lines to the object store, then
-- marks them archived only if no line arrived meanwhile. Two daemons could archive one log at once:
-- one slow upload of the lines it read could land after the other daemon had archived a line
-- appended since (a deployment's), overwriting the object without it. A daemon now takes the log
-- for its pass (archive_taken_until, by archive_taken_by), and no other daemon starts on it until
-- that has run out; the lease outlasts any upload the pass lets through.
ALTER TABLE build_log_stats ADD COLUMN archive_taken_by TEXT;
ALTER TABLE build_log_stats ADD COLUMN archive_taken_until INTEGER;

-- migration 41: every combination of build filters reads only the builds it lists
-- A listing page with several filters read one filter's index range and checked the others on at
-- most 1,000 of its entries (migration 27), so a rare combination cost more, and answered fewer
-- builds a page, the more builds there were. Each combination now has an index holding all its
-- filters ahead of build_number, where any leading column the filters leave open is status or the
-- trigger, read value by value and merged (lib/builds/store.ts listBuilds): the trigger indexes
-- hold status next, and one index of branch, status and trigger at each scope serves the three
-- together and branch with either. No listing checks index entries any more, so the project's
-- branch index and the trigger indexes drop the columns migration 27 put after build_number (the
-- pipeline's branch index keeps status: a badge and a notification's previous status read it).
DROP INDEX builds_project_trigger;
DROP INDEX builds_pipeline_trigger;
DROP INDEX builds_project_branch;
CREATE INDEX builds_project_trigger ON builds (project_id, trigger_kind, status, build_number);
CREATE INDEX builds_pipeline_trigger ON builds (pipeline_id, trigger_kind, status, build_number);
CREATE INDEX builds_project_branch ON builds (project_id, branch, build_number);
CREATE INDEX builds_project_branch_status_trigger ON builds (project_id, branch, status, trigger_kind, build_number);
CREATE INDEX builds_pipeline_branch_status_trigger ON builds (pipeline_id, branch, status, trigger_kind, build_number);

-- migration 42: the statements of every build change and push read only what they need, and write fewer indexes
-- A build that cancels the older builds of its group (lib/builds/create.ts supersededBuilds) read
-- every queued and running build of its pipeline (builds_pipeline_status) and checked each one's
-- concurrency key in its row, so a push cost more the more builds the pipeline's other groups,
-- tags and manual builds had waiting (18 ms with 50,000 queued). builds_superseded holds only the
-- builds that can still be superseded: an entry is written when such a build is queued and
-- removed when it finishes, so it stays as small as the queue.
-- Every build is written to each index of builds, and every status change to each index holding
-- status. Three listing indexes are served by wider ones, read one range per value of the column
-- the filters leave open and merged (lib/builds/store.ts listBuilds): a pipeline's builds on a
-- branch by builds_pipeline_branch_status, one range per status (as a badge and a notification's
-- previous status read them); the builds of one status, at either scope, by the trigger indexes,
-- one range per trigger. builds_status_queued held every build for the reaper's look-up of the
-- builds queued longest (lib/runners/reaper.ts); it now holds the queued ones only, and a build
-- leaves it when it starts.
CREATE INDEX builds_superseded ON builds (pipeline_id, concurrency_key, build_number) WHERE status IN ('queued', 'running') AND concurrency_key IS NOT NULL;
DROP INDEX builds_pipeline_branch;
DROP INDEX builds_project_status;
DROP INDEX builds_pipeline_status;
DROP INDEX builds_status_queued;
CREATE INDEX builds_queued_since ON builds (queued_at) WHERE status = 'queued';
-- A webhook delivery's write batch is planned from the pipelines as read before it and written only
-- if they are the same under its write lock (lib/webhooks/accept.ts). They were compared whole,
-- every column of every pipeline of the project rendered as JSON, once to read and once more under
-- the lock, on every push; a counter of the project's pipeline changes, moved by these triggers in
-- the change's own statement, says the same in one lookup of the project.
ALTER TABLE projects ADD COLUMN pipelines_version INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER pipelines_version_insert AFTER INSERT ON pipelines BEGIN UPDATE projects SET pipelines_version = pipelines_version + 1 WHERE id = NEW.project_id; END;
CREATE TRIGGER pipelines_version_update AFTER UPDATE ON pipelines BEGIN UPDATE projects SET pipelines_version = pipelines_version + 1 WHERE id IN (OLD.project_id, NEW.project_id); END;
CREATE TRIGGER pipelines_version_delete AFTER DELETE ON pipelines BEGIN UPDATE projects SET pipelines_version = pipelines_version + 1 WHERE id = OLD.project_id; END;
-- Every delivery was written to webhook_deliveries_rejected, which a count of a repository's
-- rejected deliveries reads (lib/webhooks/deliveries.ts recentRejections), and the count of its
-- failed ones (recentFailures) read that index by repository alone: every delivery of the
-- repository still kept. Each count now has a partial index of the deliveries it counts, and an
-- accepted push writes neither.
DROP INDEX webhook_deliveries_rejected;
CREATE INDEX webhook_deliveries_rejected ON webhook_deliveries (repository_id, received_at) WHERE verified = 0;
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (repository_id, received_at) WHERE result = 'failed';

-- migration 43: the runners seen lately read by a range, not the whole fleet
-- /metrics' roost_runners_connected (lib/runners/store.ts connectedRunnerCount) and the live
-- runners routing reads (liveRunners) read every registered runner, so their cost grew with the
-- fleet. A runner's touch writes last_seen_at at most once a second: the index costs little.
CREATE INDEX runners_last_seen ON runners (last_seen_at);

-- migration 44: a push's write batch is its delivery and its builds, what follows them written by triggers
-- On a libSQL server every statement costs the server about 150 µs of CPU whatever its text (it
-- prepares each one afresh; docs/benchmarks.md "Webhook pushes on sqld"), and a push's write
-- batch was six: the delivery, its dedupe keys, the project's build counter, the queue's sequence,
-- the build and its commit status. A trigger is compiled with the statement that fires it, so the
-- rows that always follow another row are now written by triggers of that row's INSERT, and the
-- batch is two statements (lib/webhooks/accept.ts, lib/builds/create.ts):
-- - a delivery's dedupe keys, carried in its row (dedupe_keys, a JSON array; NULL for a delivery
--   that takes none, as a duplicate's, a refused one's, or one whose transaction took them first).
--   A content digest past its window (CONTENT_KEY_WINDOW_SECONDS, 7 days, lib/webhooks/dedupe-keys.ts)
--   is taken over by the new delivery, as the batch's own insert did;
-- - the build counters: a new build's number and queue place are read from the counters in its
--   INSERT, and the counters move past them here (past any build written with a number of its
--   own too, as a copied-in build is), in the same statement, so numbers stay gap-free;
-- - a new build's commit status (migration 31 wrote it from lib/builds/what-follows.ts; a build is
--   queued when it is created, and builds copied in finished show nothing). Plain git remotes have none.
ALTER TABLE webhook_deliveries ADD COLUMN dedupe_keys TEXT;
CREATE TRIGGER webhook_dedupe_keys_taken AFTER INSERT ON webhook_deliveries WHEN NEW.dedupe_keys IS NOT NULL BEGIN INSERT INTO webhook_dedupe_keys (key, delivery_id, created_at) SELECT value, NEW.id, NEW.received_at FROM json_each(NEW.dedupe_keys) WHERE true ON CONFLICT (key) DO UPDATE SET delivery_id = excluded.delivery_id, created_at = excluded.created_at WHERE webhook_dedupe_keys.key GLOB NEW.host || ':content:*' AND webhook_dedupe_keys.created_at <= NEW.received_at - 604800; END;
CREATE TRIGGER builds_number_taken AFTER INSERT ON builds BEGIN UPDATE projects SET next_build_number = NEW.build_number + 1 WHERE id = NEW.project_id AND next_build_number <= NEW.build_number; END;
CREATE TRIGGER builds_queue_place_taken AFTER INSERT ON builds WHEN NEW.queue_seq IS NOT NULL BEGIN UPDATE build_queue_sequence SET next = NEW.queue_seq + 1 WHERE id = 1 AND next <= NEW.queue_seq; END;
CREATE TRIGGER builds_commit_status AFTER INSERT ON builds WHEN NEW.status = 'queued' BEGIN INSERT INTO commit_status_outbox (repository_id, commit_sha, pipeline_id, build_id, build_number, status, updated_at) SELECT p.repository_id, NEW.commit_sha, NEW.pipeline_id, NEW.id, NEW.build_number, NEW.status, NEW.updated_at FROM projects p JOIN repositories r ON r.id = p.repository_id WHERE p.id = NEW.project_id AND r.provider != 'git' ON CONFLICT (repository_id, commit_sha, pipeline_id) DO UPDATE SET build_id = excluded.build_id, build_number = excluded.build_number, status = excluded.status, version = version + 1, updated_at = excluded.updated_at WHERE excluded.build_number >= commit_status_outbox.build_number; END;

-- migration 45: webhook bodies of up to 25 MB kept on a libSQL server too
-- A libSQL server (sqld) refuses a value of more than about 4 MB ("string or blob too big") and
-- answers at most 10 MB a request, where GitHub and GitLab send bodies of up to 25 MB: a delivery
-- with such a body could not be recorded, so it built nothing. A body of more than 1 MiB is kept
-- compressed (zstd) in pieces of at most 1 MiB here, written and read a few pieces a request
-- (lib/webhooks/delivery-bodies.ts); body_pieces says how many the delivery has (0: its body, if
-- kept, is in webhook_deliveries.body, as every body was). Pieces expire with the body; pieces of
-- a delivery whose record was never written (the daemon stopped between) expire the same way.
ALTER TABLE webhook_deliveries ADD COLUMN body_pieces INTEGER NOT NULL DEFAULT 0;
CREATE TABLE webhook_delivery_bodies (
  delivery_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  piece BLOB NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, seq)
);
CREATE INDEX webhook_delivery_bodies_expires ON webhook_delivery_bodies (expires_at);

-- migration 46: a webhook verified as this daemon last read the integrations
-- A GitHub delivery is verified against every GitHub integration's webhook secret and routed by the
-- catalogue entries of the repository id it names (lib/forges/github/index.ts): two reads before
-- anything else, on every push, each a statement a libSQL server prepares afresh. A daemon keeps
-- what it last read of them (lib/integrations/as-last-read.ts), and the delivery's write is guarded
-- by this count of their changes, moved by these triggers in each change's own statement: a
-- delivery verified or routed by what changed since (a secret rotated, an integration removed, a
-- repository added) writes nothing and is verified again from what the database holds.
CREATE TABLE catalogue_version (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n INTEGER NOT NULL
);
INSERT INTO catalogue_version (id, n) VALUES (1, 0);
CREATE TRIGGER catalogue_version_integration_insert AFTER INSERT ON integrations BEGIN UPDATE catalogue_version SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER catalogue_version_integration_update AFTER UPDATE ON integrations BEGIN UPDATE catalogue_version SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER catalogue_version_integration_delete AFTER DELETE ON integrations BEGIN UPDATE catalogue_version SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER catalogue_version_repository_insert AFTER INSERT ON repositories BEGIN UPDATE catalogue_version SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER catalogue_version_repository_update AFTER UPDATE ON repositories BEGIN UPDATE catalogue_version SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER catalogue_version_repository_delete AFTER DELETE ON repositories BEGIN UPDATE catalogue_version SET n = n + 1 WHERE id = 1; END;

-- migration 47: the check-run pass reads the check runs due, not the last day's builds
-- The check-run pass (lib/test-results/check-runs.ts) read every build updated in the last day,
-- every 2 s on every daemon, and kept those with test results on a GitHub repository not yet
-- reported: its cost grew with the day's builds (13.8 ms of CPU a pass at 4,000 builds,
-- docs/benchmarks.md "The runner fleet"), and two daemons could both send one build's check run.
-- check_run_reports is now an outbox. A row is written, due, by these triggers in the transaction
-- that finishes a build with test results on a GitHub repository, or that writes the first results
-- of a build already finished (whichever commits second sees the other), and the pass reads only
-- the due rows, a range of check_run_reports_due. finished_at starts the day within which the
-- check run is sent; a pass claims the rows it sends (claimed_by, next_attempt_at moved past the
-- claim), so no other daemon sends them meanwhile. The last day's unreported builds carry over,
-- read as the range of builds_updated_at: read through the projects, the carry-over walked every
-- build of each GitHub project (26 s on a copy of a 1,000,000-build database; the range: 31 builds, 0 ms).
ALTER TABLE check_run_reports ADD COLUMN finished_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE check_run_reports ADD COLUMN claimed_by TEXT;
UPDATE check_run_reports SET finished_at = COALESCE((SELECT b.updated_at FROM builds b WHERE b.id = check_run_reports.build_id), 0);
INSERT INTO check_run_reports (build_id, finished_at, updated_at)
  SELECT b.id, b.updated_at, b.updated_at FROM builds b INDEXED BY builds_updated_at CROSS JOIN build_test_summaries s ON s.build_id = b.id
    CROSS JOIN projects p ON p.id = b.project_id CROSS JOIN repositories r ON r.id = p.repository_id
  WHERE r.provider = 'github' AND b.status IN ('succeeded', 'failed', 'canceled') AND b.updated_at >= (SELECT MAX(updated_at) FROM builds) - 86400
  ON CONFLICT (build_id) DO NOTHING;
CREATE INDEX check_run_reports_due ON check_run_reports (next_attempt_at) WHERE done = 0;
CREATE TRIGGER check_run_due_finished AFTER UPDATE OF status ON builds WHEN NEW.status IN ('succeeded', 'failed', 'canceled') AND OLD.status IS NOT NEW.status BEGIN INSERT INTO check_run_reports (build_id, finished_at, updated_at) SELECT NEW.id, NEW.updated_at, NEW.updated_at FROM build_test_summaries s JOIN projects p ON p.id = NEW.project_id JOIN repositories r ON r.id = p.repository_id WHERE s.build_id = NEW.id AND r.provider = 'github' ON CONFLICT (build_id) DO NOTHING; END;
CREATE TRIGGER check_run_due_results AFTER INSERT ON build_test_summaries BEGIN INSERT INTO check_run_reports (build_id, finished_at, updated_at) SELECT b.id, b.updated_at, NEW.updated_at FROM builds b JOIN projects p ON p.id = b.project_id JOIN repositories r ON r.id = p.repository_id WHERE b.id = NEW.build_id AND b.status IN ('succeeded', 'failed', 'canceled') AND r.provider = 'github' ON CONFLICT (build_id) DO NOTHING; END;

-- migration 48: a project's delivery log paged by cursor, by result too
-- GET /v1/projects/{id}/webhook-deliveries pages by cursor (lib/webhooks/deliveries.ts
-- listProjectDeliveries): each page one range of an index from the cursor down, newest first.
-- webhook_deliveries_project serves a project's log; a result filter had to read every delivery of
-- the project to find its own, so it has this index.
CREATE INDEX webhook_deliveries_project_result ON webhook_deliveries (project_id, result, received_at);

-- migration 49: sent check runs pruned after a day, along an index
-- check_run_reports kept every row it ever sent, so it grew with the history of builds. The
-- daemon's 10-minute pass now removes the rows sent more than a day before, 500 at a time
-- (lib/test-results/check-runs.ts pruneCheckRunReports), each piece one range of this index, oldest
-- first; the due rows (done = 0) are not in it, so a claim or a send writes no entry of it but the last.
CREATE INDEX check_run_reports_sent ON check_run_reports (updated_at) WHERE done = 1;

-- migration 50: a job's two status changes write fewer index entries, and build no IN lists
-- A job moves its build twice (queued -> running at the claim, running -> finished at the finish),
-- and each change rewrites the build's entry in every index holding a column it sets (status,
-- updated_at, finished_at): eleven of builds. The retention indexes (migration 32) held every
-- build whose logs or artifacts were kept, queued and running ones too, so both changes moved the
-- build in both; retention reads only finished builds (lib/retention/retention.ts dueBuilds), so
-- they hold only those now, and a build enters them once, when it finishes. jobs_lease held every
-- job by status, the finished ones too (the table keeps them), so a finish moved the job within
-- it; the reaper reads only running jobs by lease (lib/runners/jobs.ts expiredJobs), so it holds
-- only those, and a finished job leaves it. A finished status is written NOT IN ('queued',
-- 'running') rather than IN the three others (the CHECK on builds.status allows only those five):
-- SQLite builds a list of three or more constants into a temporary b-tree each time it evaluates
-- it, and compares a list of two in place (EXPLAIN shows the OpenEphemeral and its inserts), here
-- on every status change: in check_run_due_finished's WHEN, and it would in these indexes' WHERE. docs/benchmarks.md, "The
-- runner fleet's CPU per job: a status change's indexes", gives the figures.
DROP INDEX builds_logs_kept;
DROP INDEX builds_artifacts_kept;
CREATE INDEX builds_logs_kept ON builds (pipeline_id, COALESCE(finished_at, updated_at)) WHERE logs_deleted_at IS NULL AND status NOT IN ('queued', 'running');
CREATE INDEX builds_artifacts_kept ON builds (pipeline_id, COALESCE(finished_at, updated_at)) WHERE artifacts_deleted_at IS NULL AND status NOT IN ('queued', 'running');
DROP INDEX jobs_lease;
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE status = 'running';
DROP TRIGGER check_run_due_finished;
CREATE TRIGGER check_run_due_finished AFTER UPDATE OF status ON builds WHEN NEW.status NOT IN ('queued', 'running') AND OLD.status IS NOT NEW.status BEGIN INSERT INTO check_run_reports (build_id, finished_at, updated_at) SELECT NEW.id, NEW.updated_at, NEW.updated_at FROM build_test_summaries s JOIN projects p ON p.id = NEW.project_id JOIN repositories r ON r.id = p.repository_id WHERE s.build_id = NEW.id AND r.provider = 'github' ON CONFLICT (build_id) DO NOTHING; END;

-- migration 51: the API token list read from its indexes alone
-- GET /v1/api-tokens found each page's tokens in api_tokens_created (every token) or
-- api_tokens_creator (one creator's), then read each token's row from the table for the listed
-- columns. With those columns in the indexes (not the secret's hash), a page is read from the index
-- alone (a covering index, https://www.sqlite.org/queryplanner.html#covidx): the page of 21 tokens
-- 22.1 → 15.0 µs through bun:sqlite (lowest of 10 alternated rounds; docs/benchmarks.md "The
-- authenticated read path: the page from a covering index"). The names stay, the columns before
-- the listed ones too, so every statement that used either index still does.
DROP INDEX api_tokens_created;
CREATE INDEX api_tokens_created ON api_tokens (created_at, id, name, role, created_by, expires_at, last_used_at, revoked_at);
DROP INDEX api_tokens_creator;
CREATE INDEX api_tokens_creator ON api_tokens (created_by, created_at, id, name, role, expires_at, last_used_at, revoked_at);

-- migration 52: a push writes two branch-led indexes of builds, not four
-- Every new build is written to each index of builds, and the four that lead with its pipeline's or
-- project's branch each take a page of their own for nearly every push of a commit (pushes to many
-- branches land in as many places of them): in a commit of 32 pushes to 64 branches, each of the
-- four was 1.3-1.5 of the 11.4 WAL pages a push wrote (docs/benchmarks.md, "Webhook pushes: a
-- push's CPU by statement, index and thread"). Two of them are served by the other two, read one
-- range per value of the columns the filters leave open and merged by build number, each range
-- sought by every filter and the cursor, as migration 42 did for builds_pipeline_branch
-- (lib/builds/store.ts listBuilds): a project's builds on a branch by
-- builds_project_branch_status_trigger, one range per status and trigger; a pipeline's on a branch,
-- with a status or without, by builds_pipeline_branch_status_trigger, one range per trigger (and
-- status). The newest build of a branch in a status (a badge, a notification's previous status,
-- retention's newest success) is one seek per trigger of that index. A status change no longer
-- moves its build in builds_pipeline_branch_status either.
DROP INDEX builds_project_branch;
DROP INDEX builds_pipeline_branch_status;

-- migration 53: the delivery log's cursors name a delivery by its id, not its rowid
-- A page of a delivery log continued below the (received_at, rowid) of the last delivery it
-- listed. webhook_deliveries has no INTEGER PRIMARY KEY, and "the VACUUM command may change the
-- ROWIDs of entries in any tables that do not have an explicit INTEGER PRIMARY KEY"
-- (https://www.sqlite.org/lang_vacuum.html): a cursor handed out before a VACUUM could skip or
-- repeat deliveries (and a rebuild of the table, as migrations 8, 16, 18 and 28 made, numbers its rows
-- again). Pages are now ordered by (received_at, id), the id being the row's key, which leads with
-- the time it was made (lib/webhooks/ordered-id.ts), so a second's deliveries keep the order they
-- came in; the three indexes the pages read end with it, so a page is one seek of an index from
-- the cursor down (lib/webhooks/deliveries.ts DeliveryPosition). The names stay, so every other
-- statement that used them still does.
DROP INDEX webhook_deliveries_project;
CREATE INDEX webhook_deliveries_project ON webhook_deliveries (project_id, received_at, id);
DROP INDEX webhook_deliveries_received;
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at, id);
DROP INDEX webhook_deliveries_project_result;
CREATE INDEX webhook_deliveries_project_result ON webhook_deliveries (project_id, result, received_at, id);
