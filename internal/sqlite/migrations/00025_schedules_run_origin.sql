-- +goose Up
-- Schedules (issue 30): a task's runs started at the slots of a cron
-- expression in a time zone, or of a fixed interval, as the schedule's
-- owner. next_fire_at is the claim: a scheduler fires a slot by moving it
-- (compare-and-set) in the transaction that creates the slot's run, so a
-- slot fires once however many instances run a scheduler.
CREATE TABLE schedules (
    id            TEXT PRIMARY KEY,
    task_id       TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    owner         TEXT NOT NULL,
    token_id      TEXT NOT NULL DEFAULT '',
    name          TEXT NOT NULL,
    source        TEXT NOT NULL,
    cron          TEXT NOT NULL DEFAULT '',
    time_zone     TEXT NOT NULL DEFAULT '',
    every_ms      INTEGER NOT NULL DEFAULT 0,
    missed        TEXT NOT NULL,
    overlap       TEXT NOT NULL,
    paused        INTEGER NOT NULL DEFAULT 0,
    paused_reason TEXT NOT NULL DEFAULT '',
    next_fire_at  INTEGER NOT NULL,
    last_fire_at  INTEGER,
    last_run_id   TEXT NOT NULL DEFAULT '',
    last_error    TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (task_id, owner, name)
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE paused = 0;

-- A run's origin (issue 30, CI): the commit, branch, pull request and
-- pipeline of the CI job that started it, when it said.
ALTER TABLE runs ADD COLUMN origin_commit TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN origin_branch TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN origin_pr TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN origin_pipeline TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN origin_pipeline;
ALTER TABLE runs DROP COLUMN origin_pr;
ALTER TABLE runs DROP COLUMN origin_branch;
ALTER TABLE runs DROP COLUMN origin_commit;
DROP TABLE schedules;
