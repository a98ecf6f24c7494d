-- +goose Up
-- Duet's own OAuth authorization server: clients registered dynamically
-- (RFC 7591) and every secret it hands out (login states, codes, access
-- and refresh tokens), kept by hash only.
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL DEFAULT '',
    redirect_uris TEXT NOT NULL, -- JSON array
    secret_hash   TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL
);

CREATE TABLE oauth_tokens (
    hash       TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    grant_id   TEXT NOT NULL DEFAULT '',
    client_id  TEXT NOT NULL DEFAULT '',
    user_id    TEXT NOT NULL DEFAULT '',
    scope      TEXT NOT NULL DEFAULT '',
    data       TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

-- +goose Down
DROP TABLE oauth_tokens;
DROP TABLE oauth_clients;
