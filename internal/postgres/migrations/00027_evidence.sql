-- +goose Up
-- Evidence (docs/suite-format.md "Traces", "Visual comparison"; issue 28).
-- When a case keeps a trace: the task's mode and the run's choice ('' is
-- the next level's: the run's falls back to the task's, the task's to
-- DUET_TRACE).
ALTER TABLE tasks ADD COLUMN trace TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN trace TEXT NOT NULL DEFAULT '';

-- The screenshots assertScreenshot steps compare against, versioned per
-- (task, case, name, device, environment, owner). The owner is the
-- executor whose run recorded it: the image is what their run saw with
-- their credentials, so only they see it, decide on it, and compare
-- against it. A baseline applies while the steps up to its assertion are
-- unchanged (fingerprint), whatever the case's version.
CREATE TABLE baselines (
    id           TEXT COLLATE "C" PRIMARY KEY,
    task_id      TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    case_id      TEXT NOT NULL,
    case_key     TEXT NOT NULL,
    case_version INTEGER NOT NULL,
    name         TEXT NOT NULL,
    device       TEXT NOT NULL,
    environment  TEXT NOT NULL,
    owner        TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    version      INTEGER NOT NULL,
    status       TEXT NOT NULL,
    image        BYTEA NOT NULL,
    sha256       TEXT NOT NULL,
    width        INTEGER NOT NULL,
    height       INTEGER NOT NULL,
    run_id       TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    step_index   INTEGER NOT NULL,
    diff_ratio   DOUBLE PRECISION,
    created_at   TIMESTAMPTZ NOT NULL,
    decided_by   TEXT NOT NULL DEFAULT '',
    decided_at   TIMESTAMPTZ,
    UNIQUE (task_id, case_id, name, device, environment, owner, version)
);
CREATE INDEX baselines_owner ON baselines (owner, created_at);

-- Page-speed values (assertPerformance) per run, for the trends page.
-- Timings like the others a run's page shows to anyone who may see it.
CREATE TABLE run_metrics (
    run_id       TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    execution_id TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    case_key     TEXT NOT NULL,
    step_index   INTEGER NOT NULL,
    name         TEXT NOT NULL,
    value        DOUBLE PRECISION NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (execution_id, step_index, name)
);
CREATE INDEX run_metrics_run ON run_metrics (run_id);

-- +goose Down
DROP TABLE run_metrics;
DROP TABLE baselines;
ALTER TABLE runs DROP COLUMN trace;
ALTER TABLE tasks DROP COLUMN trace;
