-- +goose Up
-- A user's approval of one version of a case someone else wrote (mirrors
-- SQLite's 00005): its mcpCall steps may call, with that user's own
-- credentials, MCP tools that are not read-only. Editing the case makes a new
-- version, which needs a new approval.
CREATE TABLE case_approvals (
    user_id     TEXT COLLATE "C" NOT NULL,
    case_id     TEXT COLLATE "C" NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    source_hash TEXT NOT NULL,
    task_id     TEXT COLLATE "C" NOT NULL,
    approved_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, case_id, version)
);
CREATE INDEX case_approvals_task ON case_approvals (user_id, task_id, approved_at);

-- A run's totals count its executions by status, from the index alone.
CREATE INDEX executions_run_status ON executions (run_id, status);
