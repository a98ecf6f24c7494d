-- +goose Up
-- (mirrors SQLite's 00006) lost counts the times a run's worker was lost
-- while it ran the run: its lease expired (a crash, a kill, running out of
-- memory), as opposed to a graceful release on shutdown. A run that lost its
-- worker twice ends in error instead of taking a third worker down.
ALTER TABLE runs ADD COLUMN lost INTEGER NOT NULL DEFAULT 0;
-- claimed_at is when a worker last claimed the run (NULL: never). The queue
-- serves first the executor with the fewest runs running and, among those,
-- the one it served least recently.
ALTER TABLE runs ADD COLUMN claimed_at TIMESTAMPTZ;
CREATE INDEX runs_executor_status ON runs (triggered_by, status);
CREATE INDEX runs_executor_claimed ON runs (triggered_by, claimed_at);
