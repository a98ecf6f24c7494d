-- +goose Up
-- OAuth renewals are a compare-and-swap on the stored credential: every
-- write names the version it read and bumps it (a write from an older read
-- fails instead of overwriting a newer grant), and a token is renewed only
-- under the credential's lease (holder, until: Unix microseconds), so two
-- processes never spend the same refresh token.
ALTER TABLE mcp_credentials ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE mcp_credentials ADD COLUMN lease_holder TEXT NOT NULL DEFAULT '';
ALTER TABLE mcp_credentials ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
