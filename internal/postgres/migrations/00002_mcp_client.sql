-- +goose Up
-- The MCP client side: per-user registrations of remote MCP servers, their
-- archived tool catalogs, encrypted credentials and invocation records
-- (sqlite's 00002).

-- Encrypted header values (vault ciphertext bound to owner and server_key).
CREATE TABLE mcp_credentials (
    ref        TEXT COLLATE "C" PRIMARY KEY,
    owner      TEXT COLLATE "C" NOT NULL,
    server_key TEXT COLLATE "C" NOT NULL,
    ciphertext BYTEA NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE mcp_servers (
    id               TEXT COLLATE "C" PRIMARY KEY,
    owner            TEXT COLLATE "C" NOT NULL,
    name             TEXT COLLATE "C" NOT NULL,
    url              TEXT NOT NULL,
    server_key       TEXT COLLATE "C" NOT NULL,
    credential_ref   TEXT COLLATE "C" REFERENCES mcp_credentials (ref),
    header_names     TEXT NOT NULL DEFAULT '[]',
    transport        TEXT NOT NULL DEFAULT '',
    protocol_version TEXT NOT NULL DEFAULT '',
    server_name      TEXT NOT NULL DEFAULT '',
    server_version   TEXT NOT NULL DEFAULT '',
    catalog_hash     TEXT NOT NULL DEFAULT '',
    tool_count       INTEGER NOT NULL DEFAULT 0,
    synced_at        TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    CONSTRAINT mcp_servers_name UNIQUE (owner, name),
    CONSTRAINT mcp_servers_server_key UNIQUE (owner, server_key)
);

CREATE TABLE mcp_tools (
    server_id     TEXT COLLATE "C" NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    name          TEXT COLLATE "C" NOT NULL,
    position      INTEGER NOT NULL,
    title         TEXT NOT NULL DEFAULT '',
    description   TEXT NOT NULL DEFAULT '',
    input_schema  TEXT NOT NULL DEFAULT '',
    output_schema TEXT NOT NULL DEFAULT '',
    annotations   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (server_id, name)
);

CREATE TABLE mcp_invocations (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time         TIMESTAMPTZ NOT NULL,
    trace_id     TEXT COLLATE "C" NOT NULL,
    executor     TEXT COLLATE "C" NOT NULL,
    source       TEXT NOT NULL,
    server_key   TEXT COLLATE "C" NOT NULL,
    tool         TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    duration_us  BIGINT NOT NULL,
    arg_bytes    INTEGER NOT NULL,
    result_bytes INTEGER NOT NULL
);
CREATE INDEX mcp_invocations_time ON mcp_invocations (time);
CREATE INDEX mcp_invocations_executor ON mcp_invocations (executor, time);
CREATE INDEX mcp_invocations_server ON mcp_invocations (server_key, time);
CREATE INDEX mcp_invocations_trace ON mcp_invocations (trace_id);
