-- Roost's database schema, as the ordered list of migrations that build it.
--
-- Each block starting with "-- migration N: name" is applied once, in order, inside one write
-- transaction, and recorded in schema_migrations (lib/db/migrate.ts). A released block is never
-- edited: a change to the schema is a new block at the end. Timestamps are Unix epoch seconds
-- (DECISIONS.md). Secrets are stored only as SHA-256 hex of their secret part (lib/auth/secrets.ts).

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
