-- +goose Up
-- Web console sessions (mirrors SQLite's 00010): the cookie holds a random
-- secret, this table its SHA-256 and the CSRF token of that browser. Any
-- instance serves any browser.
CREATE TABLE console_sessions (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    user_id    TEXT COLLATE "C" NOT NULL,
    csrf       TEXT COLLATE "C" NOT NULL,
    method     TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
