-- +goose Up
-- The tester's language (docs/suite-format.md): what a task's runs are
-- configured with — its environments, its default environment, its
-- beforeAll and afterAll steps (JSON, '' for none) — and who wrote those
-- hooks (approvals depend on it, as for post-run actions).
ALTER TABLE tasks ADD COLUMN run_config TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN hooks_by TEXT NOT NULL DEFAULT '';
-- The data row of a case made from one row of a data-driven case, and of
-- its executions (JSON, '' for none).
ALTER TABLE cases ADD COLUMN row TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN row TEXT NOT NULL DEFAULT '';
-- The environment a run runs in, and the results of the task's beforeAll
-- and afterAll in it with the variables beforeAll saved (JSON, '' for
-- none).
ALTER TABLE runs ADD COLUMN environment TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN hooks TEXT NOT NULL DEFAULT '';

-- Each user's named secrets (${secrets.NAME}), sealed with AES-256-GCM
-- under the master key, bound to their owner and name.
CREATE TABLE user_secrets (
    user_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, name)
);

-- +goose Down
DROP TABLE user_secrets;
ALTER TABLE runs DROP COLUMN hooks;
ALTER TABLE runs DROP COLUMN environment;
ALTER TABLE executions DROP COLUMN row;
ALTER TABLE cases DROP COLUMN row;
ALTER TABLE tasks DROP COLUMN hooks_by;
ALTER TABLE tasks DROP COLUMN run_config;
