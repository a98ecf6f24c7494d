-- +goose Up
-- OAuth renewals are a compare-and-swap on the stored credential (mirrors
-- SQLite's 00008): every write names the version it read and bumps it, and a
-- token is renewed only under the credential's lease, so two instances never
-- spend the same refresh token.
ALTER TABLE mcp_credentials ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE mcp_credentials ADD COLUMN lease_holder TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE mcp_credentials ADD COLUMN lease_until TIMESTAMPTZ;
