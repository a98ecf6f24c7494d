-- +goose Up
-- How a registration authenticates besides static headers: '' (headers only),
-- 'oauth' (authorization code + PKCE, per user) or 'client-credentials'
-- (machine identity); sqlite's 00004.
ALTER TABLE mcp_servers ADD COLUMN auth TEXT NOT NULL DEFAULT '';
