-- +goose Up
-- Webhooks per task (issue 30): a URL a task's events are POSTed to,
-- signed with its secret (sealed under the master key).
CREATE TABLE webhooks (
    id                TEXT COLLATE "C" PRIMARY KEY,
    task_id           TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    url               TEXT NOT NULL,
    events            TEXT NOT NULL,
    on_when           TEXT NOT NULL,
    format            TEXT NOT NULL,
    disabled          BOOLEAN NOT NULL DEFAULT FALSE,
    secret            BYTEA NOT NULL,
    created_by        TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    secret_rotated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (task_id, name)
);

-- Deliveries: the row is the job. due_at is the next attempt while
-- pending and the lease's end while delivering; an instance claims the
-- oldest due row under a lease.
CREATE TABLE webhook_deliveries (
    id              TEXT COLLATE "C" PRIMARY KEY,
    webhook_id      TEXT COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    task_id         TEXT NOT NULL,
    event           TEXT NOT NULL,
    run_id          TEXT NOT NULL DEFAULT '',
    case_id         TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    payload         BYTEA,
    due_at          TIMESTAMPTZ NOT NULL,
    last_attempt_at TIMESTAMPTZ,
    response_code   INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    redelivery_of   TEXT NOT NULL DEFAULT '',
    lease           TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE status IN ('pending', 'delivering');
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);

-- When each registration's catalog was last claimed for an automatic
-- sync (DUET_MCP_SYNC_INTERVAL): apart from mcp_servers, whose every
-- update moves the read cache's counter.
CREATE TABLE mcp_auto_sync (
    registration_id TEXT COLLATE "C" PRIMARY KEY REFERENCES mcp_servers (id) ON DELETE CASCADE,
    claimed_at      TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE mcp_auto_sync;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
