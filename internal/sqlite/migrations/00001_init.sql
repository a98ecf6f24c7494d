-- +goose Up
-- Times are stored as Unix microseconds (UTC).

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    base_url    TEXT NOT NULL DEFAULT '',
    device      TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (owner, name)
);

CREATE TABLE task_shares (
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, user_id)
);
CREATE INDEX task_shares_user ON task_shares (user_id);

CREATE TABLE cases (
    id          TEXT PRIMARY KEY,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    title       TEXT NOT NULL,
    source      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    steps       TEXT NOT NULL,
    timeout_ms  INTEGER NOT NULL DEFAULT 0,
    version     INTEGER NOT NULL,
    status      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (task_id, key)
);

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    task_id          TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    status           TEXT NOT NULL,
    triggered_by     TEXT NOT NULL,
    call_source      TEXT NOT NULL,
    trace_id         TEXT NOT NULL DEFAULT '',
    device           TEXT NOT NULL DEFAULT '',
    error_code       TEXT NOT NULL DEFAULT '',
    error_message    TEXT NOT NULL DEFAULT '',
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_expires_at INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_queue ON runs (status, id);
CREATE INDEX runs_task ON runs (task_id, id);

CREATE TABLE executions (
    id            TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    case_id       TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    case_key      TEXT NOT NULL,
    case_title    TEXT NOT NULL,
    case_version  INTEGER NOT NULL,
    ordinal       INTEGER NOT NULL,
    timeout_ms    INTEGER NOT NULL DEFAULT 0,
    status        TEXT NOT NULL,
    steps         TEXT NOT NULL,
    vars          TEXT NOT NULL DEFAULT '{}',
    error_code    TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    started_at    INTEGER,
    finished_at   INTEGER
);
CREATE INDEX executions_run ON executions (run_id, ordinal);

CREATE TABLE step_results (
    execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    data         TEXT NOT NULL,
    PRIMARY KEY (execution_id, idx)
);

CREATE TABLE idempotency (
    caller     TEXT NOT NULL,
    key        TEXT NOT NULL,
    tool       TEXT NOT NULL,
    args_hash  TEXT NOT NULL,
    result     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (caller, key)
);
CREATE INDEX idempotency_expiry ON idempotency (expires_at);

CREATE TABLE tokens (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    hash         TEXT NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    last_used_at INTEGER
);
CREATE INDEX tokens_user ON tokens (user_id);

CREATE TABLE audit (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    time         INTEGER NOT NULL,
    trace_id     TEXT NOT NULL,
    call_source  TEXT NOT NULL,
    caller       TEXT NOT NULL,
    method       TEXT NOT NULL,
    tool         TEXT NOT NULL DEFAULT '',
    outcome      TEXT NOT NULL,
    duration_us  INTEGER NOT NULL,
    arg_bytes    INTEGER NOT NULL,
    result_bytes INTEGER NOT NULL
);
CREATE INDEX audit_time ON audit (time);
CREATE INDEX audit_caller ON audit (caller, time);
CREATE INDEX audit_trace ON audit (trace_id);
