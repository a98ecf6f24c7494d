-- +goose Up
-- Stop requests and post-run actions (mirrors SQLite's 00011). A pending
-- stop request past expires_at reads as expired.
CREATE TABLE stop_requests (
    id           TEXT COLLATE "C" PRIMARY KEY,
    run_id       TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    task_id      TEXT COLLATE "C" NOT NULL,
    executor     TEXT COLLATE "C" NOT NULL,
    requested_by TEXT COLLATE "C" NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    trace_id     TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    via          TEXT NOT NULL DEFAULT '',
    decided_by   TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    decided_at   TIMESTAMPTZ
);
CREATE INDEX stop_requests_executor ON stop_requests (executor, id);
CREATE INDEX stop_requests_requester ON stop_requests (requested_by, id);
CREATE INDEX stop_requests_run ON stop_requests (run_id, id);

ALTER TABLE tasks ADD COLUMN post_run TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN post_run_by TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN post_run TEXT NOT NULL DEFAULT '';

CREATE TABLE post_run_approvals (
    user_id     TEXT COLLATE "C" NOT NULL,
    task_id     TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    hash        TEXT COLLATE "C" NOT NULL,
    approved_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, task_id, hash)
);

