-- +goose Up
-- The shared cache of acting AI steps (ai, aiTap, aiFill; docs/ai-steps.md,
-- issue 29): what a model decided for a step of a version of a case, once
-- the step's goal was verified, replayed by the next run without a model
-- call while its locators resolve and its page region matches. One plan
-- per fingerprint of the region where it starts; written only by the
-- worker that holds the run that verified it.
CREATE TABLE ai_plans (
    id           TEXT PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    case_id      TEXT NOT NULL,
    case_version INTEGER NOT NULL,
    step_index   INTEGER NOT NULL,
    step_hash    TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    actions      TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    hits         INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    used_at      INTEGER NOT NULL,
    UNIQUE (case_id, case_version, step_index, step_hash, fingerprint)
);
CREATE INDEX ai_plans_task ON ai_plans (task_id, case_id);

-- +goose Down
DROP TABLE ai_plans;
