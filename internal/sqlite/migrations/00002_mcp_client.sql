-- +goose Up
-- The MCP client side: per-user registrations of remote MCP servers, their
-- archived tool catalogs, encrypted credentials and invocation records.
-- Times are stored as Unix microseconds (UTC).

-- Encrypted header values (vault ciphertext bound to owner and server_key).
CREATE TABLE mcp_credentials (
    ref        TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    server_key TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE mcp_servers (
    id               TEXT PRIMARY KEY,
    owner            TEXT NOT NULL,
    name             TEXT NOT NULL,
    url              TEXT NOT NULL,
    server_key       TEXT NOT NULL,
    credential_ref   TEXT REFERENCES mcp_credentials (ref),
    header_names     TEXT NOT NULL DEFAULT '[]',
    transport        TEXT NOT NULL DEFAULT '',
    protocol_version TEXT NOT NULL DEFAULT '',
    server_name      TEXT NOT NULL DEFAULT '',
    server_version   TEXT NOT NULL DEFAULT '',
    catalog_hash     TEXT NOT NULL DEFAULT '',
    tool_count       INTEGER NOT NULL DEFAULT 0,
    synced_at        INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (owner, name),
    UNIQUE (owner, server_key)
);

CREATE TABLE mcp_tools (
    server_id     TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    position      INTEGER NOT NULL,
    title         TEXT NOT NULL DEFAULT '',
    description   TEXT NOT NULL DEFAULT '',
    input_schema  TEXT NOT NULL DEFAULT '',
    output_schema TEXT NOT NULL DEFAULT '',
    annotations   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (server_id, name)
);

CREATE TABLE mcp_invocations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    time         INTEGER NOT NULL,
    trace_id     TEXT NOT NULL,
    executor     TEXT NOT NULL,
    source       TEXT NOT NULL,
    server_key   TEXT NOT NULL,
    tool         TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    duration_us  INTEGER NOT NULL,
    arg_bytes    INTEGER NOT NULL,
    result_bytes INTEGER NOT NULL
);
CREATE INDEX mcp_invocations_time ON mcp_invocations (time);
CREATE INDEX mcp_invocations_executor ON mcp_invocations (executor, time);
CREATE INDEX mcp_invocations_server ON mcp_invocations (server_key, time);
CREATE INDEX mcp_invocations_trace ON mcp_invocations (trace_id);
