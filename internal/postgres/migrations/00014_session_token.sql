-- +goose Up
-- A console session remembers the personal access token it was started
-- with: revoking the token ends its sessions.
ALTER TABLE console_sessions ADD COLUMN token_id TEXT NOT NULL DEFAULT '';
CREATE INDEX console_sessions_token ON console_sessions (token_id);

-- +goose Down
DROP INDEX console_sessions_token;
ALTER TABLE console_sessions DROP COLUMN token_id;
