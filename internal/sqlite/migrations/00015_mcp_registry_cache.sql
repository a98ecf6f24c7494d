-- +goose Up
-- The read cache (cache.go) also keeps the registry lookup every invoke()
-- repeats: an executor's registration of a serverKey and the archived tool
-- (FindMCPServerTool). Any change to a registration or to an archived tool
-- list — registered, replaced, removed, re-synced, by this process, another
-- `duet` on the same file or a hand-written statement — moves the same
-- counter as 00013's triggers, so the next call reads it afresh.
--
-- mcp_credentials has no trigger: nothing cached is read from it. invoke()
-- reads and decrypts a credential only when it opens a session, uncached,
-- and a replaced credential comes with an update of its registration
-- (ReplaceMCPServer), which moves the counter.
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_mcp_servers_insert AFTER INSERT ON mcp_servers BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_mcp_servers_update AFTER UPDATE ON mcp_servers BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_mcp_servers_delete AFTER DELETE ON mcp_servers BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_mcp_tools_insert AFTER INSERT ON mcp_tools BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_mcp_tools_update AFTER UPDATE ON mcp_tools BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER cache_epoch_mcp_tools_delete AFTER DELETE ON mcp_tools BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER cache_epoch_mcp_servers_insert;
DROP TRIGGER cache_epoch_mcp_servers_update;
DROP TRIGGER cache_epoch_mcp_servers_delete;
DROP TRIGGER cache_epoch_mcp_tools_insert;
DROP TRIGGER cache_epoch_mcp_tools_update;
DROP TRIGGER cache_epoch_mcp_tools_delete;
