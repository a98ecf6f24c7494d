-- +goose Up
-- When a registered OAuth client last obtained an access token (NULL:
-- never): the maintenance loop deletes clients that registered and never
-- obtained one within a day, so anonymous registration cannot grow the
-- table without bound.
ALTER TABLE oauth_clients ADD COLUMN last_used_at INTEGER;

-- +goose Down
ALTER TABLE oauth_clients DROP COLUMN last_used_at;
