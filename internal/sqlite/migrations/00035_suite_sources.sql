-- +goose Up
-- The YAML each task was last applied from (duet.SuiteSource), written in
-- the apply's transaction: the console's suite editor opens it.
CREATE TABLE suite_sources (
    task_id    TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    source     TEXT NOT NULL,
    applied_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

-- +goose Down
DROP TABLE suite_sources;
