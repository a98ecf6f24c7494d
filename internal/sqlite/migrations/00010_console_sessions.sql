-- +goose Up
-- Web console sessions: the cookie holds a random secret, this table its
-- SHA-256 and the CSRF token of that browser. Any instance serves any
-- browser.
CREATE TABLE console_sessions (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    csrf       TEXT NOT NULL,
    method     TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
