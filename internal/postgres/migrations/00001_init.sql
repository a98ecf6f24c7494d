-- +goose Up
-- The PostgreSQL schema mirrors internal/sqlite's migration for migration:
-- 00001 here is sqlite's 00001, and so on. Identifiers and names compare and
-- sort byte-wise (COLLATE "C"), as in SQLite, whatever the database's
-- collation: cursors and orders are the same on both engines. JSON is kept
-- as text, exactly as written (jsonb would reorder keys and refuse \u0000).

CREATE TABLE tasks (
    id          TEXT COLLATE "C" PRIMARY KEY,
    owner       TEXT COLLATE "C" NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    base_url    TEXT NOT NULL DEFAULT '',
    device      TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (owner, name)
);

CREATE TABLE task_shares (
    task_id    TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    user_id    TEXT COLLATE "C" NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (task_id, user_id)
);
CREATE INDEX task_shares_user ON task_shares (user_id);

CREATE TABLE cases (
    id          TEXT COLLATE "C" PRIMARY KEY,
    task_id     TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    key         TEXT COLLATE "C" NOT NULL,
    title       TEXT NOT NULL,
    source      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    steps       TEXT NOT NULL,
    timeout_ms  BIGINT NOT NULL DEFAULT 0,
    version     INTEGER NOT NULL,
    status      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (task_id, key)
);

-- The run row is the job: workers claim it with FOR UPDATE SKIP LOCKED and
-- hold it under a lease (lease_owner until lease_expires_at).
CREATE TABLE runs (
    id               TEXT COLLATE "C" PRIMARY KEY,
    task_id          TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    status           TEXT NOT NULL,
    triggered_by     TEXT COLLATE "C" NOT NULL,
    call_source      TEXT NOT NULL,
    trace_id         TEXT NOT NULL DEFAULT '',
    device           TEXT NOT NULL DEFAULT '',
    error_code       TEXT NOT NULL DEFAULT '',
    error_message    TEXT NOT NULL DEFAULT '',
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       TIMESTAMPTZ NOT NULL,
    started_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ,
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_expires_at TIMESTAMPTZ,
    attempt          INTEGER NOT NULL DEFAULT 0
);
-- Only unfinished runs are candidates of a claim: the index stays small
-- however many finished runs the table holds.
CREATE INDEX runs_claimable ON runs (id) WHERE status IN ('queued', 'running');
CREATE INDEX runs_status ON runs (status, id);
CREATE INDEX runs_task ON runs (task_id, id);

CREATE TABLE executions (
    id            TEXT COLLATE "C" PRIMARY KEY,
    run_id        TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    case_id       TEXT COLLATE "C" NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    case_key      TEXT NOT NULL,
    case_title    TEXT NOT NULL,
    case_version  INTEGER NOT NULL,
    ordinal       INTEGER NOT NULL,
    timeout_ms    BIGINT NOT NULL DEFAULT 0,
    status        TEXT NOT NULL,
    steps         TEXT NOT NULL,
    vars          TEXT NOT NULL DEFAULT '{}',
    error_code    TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    started_at    TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ
);
CREATE INDEX executions_run ON executions (run_id, ordinal);
CREATE INDEX executions_case ON executions (case_id);

CREATE TABLE step_results (
    execution_id TEXT COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    data         TEXT NOT NULL,
    PRIMARY KEY (execution_id, idx)
);

CREATE TABLE idempotency (
    caller     TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    tool       TEXT NOT NULL,
    args_hash  TEXT NOT NULL,
    result     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (caller, key)
);
CREATE INDEX idempotency_expiry ON idempotency (expires_at);

CREATE TABLE tokens (
    id           TEXT COLLATE "C" PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    hash         TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ
);
CREATE INDEX tokens_user ON tokens (user_id);

CREATE TABLE audit (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time         TIMESTAMPTZ NOT NULL,
    trace_id     TEXT COLLATE "C" NOT NULL,
    call_source  TEXT NOT NULL,
    caller       TEXT COLLATE "C" NOT NULL,
    method       TEXT NOT NULL,
    tool         TEXT NOT NULL DEFAULT '',
    outcome      TEXT NOT NULL,
    duration_us  BIGINT NOT NULL,
    arg_bytes    INTEGER NOT NULL,
    result_bytes INTEGER NOT NULL
);
CREATE INDEX audit_time ON audit (time);
CREATE INDEX audit_caller ON audit (caller, time);
CREATE INDEX audit_trace ON audit (trace_id);
