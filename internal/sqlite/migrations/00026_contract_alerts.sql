-- +goose Up
-- Contract alerts (issue 30): a case whose MCP tool changed under it when
-- the tool's server was synced again, broken (its call no longer fits) or
-- changed in a compatible way. One row per case, server and tool; a row
-- concerns the case version it was found for.
CREATE TABLE contract_alerts (
    case_id      TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    server_key   TEXT NOT NULL,
    tool         TEXT NOT NULL,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    case_version INTEGER NOT NULL,
    broken       INTEGER NOT NULL,
    detail       TEXT NOT NULL,
    detected_at  INTEGER NOT NULL,
    PRIMARY KEY (case_id, server_key, tool)
);
CREATE INDEX contract_alerts_task ON contract_alerts (task_id);

-- The catalogs syncs replaced (the newest few per registration), for
-- duet server diff.
CREATE TABLE mcp_catalog_history (
    registration_id TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    synced_at       INTEGER NOT NULL,
    hash            TEXT NOT NULL,
    tools           TEXT NOT NULL,
    PRIMARY KEY (registration_id, synced_at)
);

-- +goose Down
DROP TABLE mcp_catalog_history;
DROP TABLE contract_alerts;
