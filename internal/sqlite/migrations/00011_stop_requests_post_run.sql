-- +goose Up
-- Stop requests (the stop_test_run tool): who asked to stop which run, and
-- who approved or declined it, when and how. Kept once decided, for the
-- audit trail. A pending request past expires_at reads as expired.
CREATE TABLE stop_requests (
    id           TEXT PRIMARY KEY,
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL,
    executor     TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    trace_id     TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    via          TEXT NOT NULL DEFAULT '',
    decided_by   TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    decided_at   INTEGER
);
CREATE INDEX stop_requests_executor ON stop_requests (executor, id);
CREATE INDEX stop_requests_requester ON stop_requests (requested_by, id);
CREATE INDEX stop_requests_run ON stop_requests (run_id, id);

-- Post-run actions: the MCP tool calls a task makes when a run ends (JSON,
-- '' for none), who wrote them, and each run's outcomes of them (JSON).
ALTER TABLE tasks ADD COLUMN post_run TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN post_run_by TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN post_run TEXT NOT NULL DEFAULT '';

-- A user's approval of one version (hash) of the post-run actions of a
-- task someone else wrote.
CREATE TABLE post_run_approvals (
    user_id     TEXT NOT NULL,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    hash        TEXT NOT NULL,
    approved_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, task_id, hash)
);

-- +goose Down
DROP TABLE post_run_approvals;
ALTER TABLE runs DROP COLUMN post_run;
ALTER TABLE tasks DROP COLUMN post_run_by;
ALTER TABLE tasks DROP COLUMN post_run;
DROP TABLE stop_requests;
