-- +goose Up
-- Retries and tags (docs/suite-format.md): how many times a failed case is
-- retried from its start, and its tags (JSON, '' for none), which select
-- the cases of a run.
ALTER TABLE cases ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cases ADD COLUMN tags TEXT NOT NULL DEFAULT '';
-- An execution's retries, the attempt it is at (1 the first), and its
-- earlier, failed attempts with their step results.
ALTER TABLE executions ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
CREATE TABLE execution_attempts (
    execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    attempt      INTEGER NOT NULL,
    data         TEXT NOT NULL,
    PRIMARY KEY (execution_id, attempt)
);
-- A schedule's tags (JSON, '' for none): its runs run the cases with any
-- of them.
ALTER TABLE schedules ADD COLUMN tags TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE schedules DROP COLUMN tags;
DROP TABLE execution_attempts;
ALTER TABLE executions DROP COLUMN attempt;
ALTER TABLE executions DROP COLUMN retries;
ALTER TABLE cases DROP COLUMN tags;
ALTER TABLE cases DROP COLUMN retries;
