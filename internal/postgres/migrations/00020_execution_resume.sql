-- +goose Up
-- The step an interrupted execution resumes at: 0, it restarts from its
-- first step; n > 0, a worker that was stopping recorded that its steps
-- before n are stored whole (their results, and the variables as the case
-- held them), so the next holder goes on at step n instead of running them
-- again (docs/deployment.md, stopping).
ALTER TABLE executions ADD COLUMN resume_from INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE executions DROP COLUMN resume_from;
