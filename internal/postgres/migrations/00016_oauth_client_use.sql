-- +goose Up
-- When a registered OAuth client last obtained an access token (NULL:
-- never): the maintenance loop deletes clients that registered and never
-- obtained one within a day (mirrors SQLite's 00016).
ALTER TABLE oauth_clients ADD COLUMN last_used_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE oauth_clients DROP COLUMN last_used_at;
