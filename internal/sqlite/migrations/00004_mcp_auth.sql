-- +goose Up
-- How a registration authenticates besides static headers: '' (headers only),
-- 'oauth' (authorization code + PKCE, per user) or 'client-credentials'
-- (machine identity). The OAuth configuration and tokens are sealed in the
-- registration's credential, like header values.
ALTER TABLE mcp_servers ADD COLUMN auth TEXT NOT NULL DEFAULT '';
