-- +goose Up
-- Duet's own OAuth authorization server (mirrors SQLite's 00013): clients
-- registered dynamically (RFC 7591) and every secret it hands out (login
-- states, codes, access and refresh tokens), kept by hash only.
CREATE TABLE oauth_clients (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT NOT NULL DEFAULT '',
    redirect_uris JSONB NOT NULL,
    secret_hash   TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE oauth_tokens (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    kind       TEXT COLLATE "C" NOT NULL,
    grant_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    client_id  TEXT COLLATE "C" NOT NULL DEFAULT '',
    user_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    scope      TEXT NOT NULL DEFAULT '',
    data       TEXT NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

-- +goose Down
DROP TABLE oauth_tokens;
DROP TABLE oauth_clients;
