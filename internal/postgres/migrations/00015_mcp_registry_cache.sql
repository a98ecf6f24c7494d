-- +goose Up
-- SQLite's 00015 adds triggers that keep its read cache of the MCP registry
-- lookup fresh. This engine has no read cache — every instance reads the
-- server, so a replaced or removed registration and a re-synced catalog are
-- seen at once by all of them — and needs no change: this migration only
-- keeps the two engines' migrations numbered alike.
SELECT 1;

-- +goose Down
SELECT 1;
