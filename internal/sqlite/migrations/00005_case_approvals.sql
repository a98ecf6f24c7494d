-- +goose Up
-- A user's approval of one version of a case someone else wrote: its mcpCall
-- steps may call, with that user's own credentials, MCP tools that are not
-- read-only. Editing the case makes a new version, which needs a new approval.
CREATE TABLE case_approvals (
    user_id     TEXT NOT NULL,
    case_id     TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    source_hash TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    approved_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, case_id, version)
);
CREATE INDEX case_approvals_task ON case_approvals (user_id, task_id, approved_at);

-- A run's totals count its executions by status: with this index a run of
-- 20,000 cases is counted from the index alone (get_test_run reads them on
-- every page).
CREATE INDEX executions_run_status ON executions (run_id, status);
