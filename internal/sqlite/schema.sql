-- What the embedded migrations leave in an empty database: a fresh database
-- is created from this file in one transaction (snapshot.go). Generated from
-- the migrations; do not edit. After adding a migration, rewrite it with
--   go test ./internal/sqlite -run TestSchemaSnapshot -update
CREATE TABLE goose_db_version (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		version_id INTEGER NOT NULL,
		is_applied INTEGER NOT NULL,
		tstamp TIMESTAMP DEFAULT (datetime('now'))
	);
CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    base_url    TEXT NOT NULL DEFAULT '',
    device      TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL, post_run TEXT NOT NULL DEFAULT '', post_run_by TEXT NOT NULL DEFAULT '', trace TEXT NOT NULL DEFAULT '', run_config TEXT NOT NULL DEFAULT '', hooks_by TEXT NOT NULL DEFAULT '',
    UNIQUE (owner, name)
);
CREATE TABLE task_shares (
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    created_at INTEGER NOT NULL, team_id TEXT REFERENCES teams (id) ON DELETE CASCADE,
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
    updated_at  INTEGER NOT NULL, row TEXT NOT NULL DEFAULT '', retries INTEGER NOT NULL DEFAULT 0, tags TEXT NOT NULL DEFAULT '',
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
, lost INTEGER NOT NULL DEFAULT 0, claimed_at INTEGER NOT NULL DEFAULT 0, post_run TEXT NOT NULL DEFAULT '', call_depth INTEGER NOT NULL DEFAULT 0, origin_commit TEXT NOT NULL DEFAULT '', origin_branch TEXT NOT NULL DEFAULT '', origin_pr TEXT NOT NULL DEFAULT '', origin_pipeline TEXT NOT NULL DEFAULT '', trace TEXT NOT NULL DEFAULT '', environment TEXT NOT NULL DEFAULT '', hooks TEXT NOT NULL DEFAULT '');
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
, resume_from INTEGER NOT NULL DEFAULT 0, row TEXT NOT NULL DEFAULT '', retries INTEGER NOT NULL DEFAULT 0, attempt INTEGER NOT NULL DEFAULT 1);
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
, parent_id TEXT REFERENCES tokens (id) ON DELETE CASCADE);
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
CREATE INDEX audit_trace ON audit (trace_id);
CREATE TABLE mcp_credentials (
    ref        TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    server_key TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    updated_at INTEGER NOT NULL
, version INTEGER NOT NULL DEFAULT 1, lease_holder TEXT NOT NULL DEFAULT '', lease_until INTEGER NOT NULL DEFAULT 0);
CREATE TABLE mcp_servers (
    id               TEXT PRIMARY KEY,
    owner            TEXT NOT NULL,
    name             TEXT NOT NULL,
    url              TEXT NOT NULL,
    server_key       TEXT NOT NULL,
    credential_ref   TEXT REFERENCES mcp_credentials (ref),
    header_names     TEXT NOT NULL DEFAULT '[]',
    transport        TEXT NOT NULL DEFAULT '',
    protocol_version TEXT NOT NULL DEFAULT '',
    server_name      TEXT NOT NULL DEFAULT '',
    server_version   TEXT NOT NULL DEFAULT '',
    catalog_hash     TEXT NOT NULL DEFAULT '',
    tool_count       INTEGER NOT NULL DEFAULT 0,
    synced_at        INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL, auth TEXT NOT NULL DEFAULT '',
    UNIQUE (owner, name),
    UNIQUE (owner, server_key)
);
CREATE TABLE mcp_tools (
    server_id     TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    position      INTEGER NOT NULL,
    title         TEXT NOT NULL DEFAULT '',
    description   TEXT NOT NULL DEFAULT '',
    input_schema  TEXT NOT NULL DEFAULT '',
    output_schema TEXT NOT NULL DEFAULT '',
    annotations   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (server_id, name)
);
CREATE TABLE mcp_invocations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    time         INTEGER NOT NULL,
    trace_id     TEXT NOT NULL,
    executor     TEXT NOT NULL,
    source       TEXT NOT NULL,
    server_key   TEXT NOT NULL,
    tool         TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    duration_us  INTEGER NOT NULL,
    arg_bytes    INTEGER NOT NULL,
    result_bytes INTEGER NOT NULL
);
CREATE INDEX mcp_invocations_time ON mcp_invocations (time);
CREATE INDEX mcp_invocations_server ON mcp_invocations (server_key, time);
CREATE INDEX mcp_invocations_trace ON mcp_invocations (trace_id);
CREATE TABLE assets (
    id         TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL, -- the latest version
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (owner, kind, name)
);
CREATE INDEX assets_kind_name ON assets (kind, name);
CREATE TABLE asset_versions (
    asset_id    TEXT NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (asset_id, version)
);
CREATE TABLE asset_shares (
    asset_id   TEXT NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    created_at INTEGER NOT NULL, team_id TEXT REFERENCES teams (id) ON DELETE CASCADE,
    PRIMARY KEY (asset_id, user_id)
);
CREATE INDEX asset_shares_user ON asset_shares (user_id);
CREATE TABLE generations (
    id                TEXT PRIMARY KEY,
    task_id           TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    model             TEXT NOT NULL DEFAULT '',
    goal              TEXT NOT NULL DEFAULT '',
    assets            TEXT NOT NULL DEFAULT '[]',
    turns             INTEGER NOT NULL DEFAULT 0,
    tool_calls        INTEGER NOT NULL DEFAULT 0,
    repairs           INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    attempts          INTEGER NOT NULL DEFAULT 0,
    outcome           TEXT NOT NULL,
    error_message     TEXT NOT NULL DEFAULT '',
    duration_ms       INTEGER NOT NULL DEFAULT 0,
    case_id           TEXT NOT NULL DEFAULT '',
    case_version      INTEGER NOT NULL DEFAULT 0,
    trace_id          TEXT NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL
);
CREATE INDEX generations_user ON generations (user_id, id);
CREATE INDEX generations_task ON generations (task_id, id);
CREATE TABLE case_approvals (
    user_id     TEXT NOT NULL,
    case_id     TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    source_hash TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    approved_at INTEGER NOT NULL, destinations_hash TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, case_id, version)
);
CREATE INDEX case_approvals_task ON case_approvals (user_id, task_id, approved_at);
CREATE INDEX executions_run_status ON executions (run_id, status);
CREATE INDEX runs_executor_status ON runs (triggered_by, status);
CREATE INDEX runs_executor_claimed ON runs (triggered_by, claimed_at);
CREATE TABLE device_leases (
    device      TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    owner       TEXT NOT NULL DEFAULT '',
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE TABLE teams (
    name       TEXT PRIMARY KEY,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL
, id TEXT);
CREATE TABLE team_members (
    team     TEXT NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    user_id  TEXT NOT NULL,
    added_by TEXT NOT NULL,
    added_at INTEGER NOT NULL, role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'maintainer', 'member')),
    PRIMARY KEY (team, user_id)
);
CREATE INDEX team_members_user ON team_members (user_id);
CREATE TABLE team_servers (
    team        TEXT NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    url         TEXT NOT NULL,
    server_key  TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    tools       TEXT NOT NULL DEFAULT '[]',
    added_by    TEXT NOT NULL,
    added_at    INTEGER NOT NULL,
    PRIMARY KEY (team, name)
);
CREATE TABLE task_transfers (
    id         INTEGER PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    from_owner TEXT NOT NULL,
    to_owner   TEXT NOT NULL,
    by_user    TEXT NOT NULL,
    at         INTEGER NOT NULL
);
CREATE INDEX task_transfers_task ON task_transfers (task_id, id);
CREATE TABLE console_sessions (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    csrf       TEXT NOT NULL,
    method     TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
, token_id TEXT NOT NULL DEFAULT '');
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
CREATE TABLE stop_requests (
    id           TEXT PRIMARY KEY,
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL,
    executor     TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    trace_id     TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    via          TEXT NOT NULL DEFAULT '',
    decided_by   TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    decided_at   INTEGER
);
CREATE INDEX stop_requests_executor ON stop_requests (executor, id);
CREATE INDEX stop_requests_requester ON stop_requests (requested_by, id);
CREATE INDEX stop_requests_run ON stop_requests (run_id, id);
CREATE TABLE post_run_approvals (
    user_id     TEXT NOT NULL,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    hash        TEXT NOT NULL,
    approved_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, task_id, hash)
);
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL DEFAULT '',
    redirect_uris TEXT NOT NULL, -- JSON array
    secret_hash   TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL
, last_used_at INTEGER);
CREATE TABLE oauth_tokens (
    hash       TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    grant_id   TEXT NOT NULL DEFAULT '',
    client_id  TEXT NOT NULL DEFAULT '',
    user_id    TEXT NOT NULL DEFAULT '',
    scope      TEXT NOT NULL DEFAULT '',
    data       TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);
CREATE TABLE cache_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
CREATE INDEX tasks_owner_id ON tasks (owner, id);
CREATE INDEX audit_caller_id ON audit (caller, id);
CREATE INDEX mcp_invocations_executor_id ON mcp_invocations (executor, id);
CREATE INDEX console_sessions_token ON console_sessions (token_id);
CREATE UNIQUE INDEX teams_id ON teams (id);
CREATE INDEX task_shares_team ON task_shares (team_id);
CREATE INDEX asset_shares_team ON asset_shares (team_id);
CREATE INDEX tokens_parent ON tokens (parent_id);
CREATE INDEX runs_executor_created ON runs (triggered_by, created_at);
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
    updated_at    INTEGER NOT NULL, tags TEXT NOT NULL DEFAULT '',
    UNIQUE (task_id, owner, name)
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE paused = 0;
CREATE TABLE contract_alerts (
    case_id      TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    server_key   TEXT NOT NULL,
    tool         TEXT NOT NULL,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    case_version INTEGER NOT NULL,
    broken       INTEGER NOT NULL,
    detail       TEXT NOT NULL,
    detected_at  INTEGER NOT NULL,
    PRIMARY KEY (case_id, server_key, tool)
);
CREATE INDEX contract_alerts_task ON contract_alerts (task_id);
CREATE TABLE mcp_catalog_history (
    registration_id TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    synced_at       INTEGER NOT NULL,
    hash            TEXT NOT NULL,
    tools           TEXT NOT NULL,
    PRIMARY KEY (registration_id, synced_at)
);
CREATE TABLE baselines (
    id           TEXT PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
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
    image        BLOB NOT NULL,
    sha256       TEXT NOT NULL,
    width        INTEGER NOT NULL,
    height       INTEGER NOT NULL,
    run_id       TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    step_index   INTEGER NOT NULL,
    diff_ratio   REAL,
    created_at   INTEGER NOT NULL,
    decided_by   TEXT NOT NULL DEFAULT '',
    decided_at   INTEGER,
    UNIQUE (task_id, case_id, name, device, environment, owner, version)
);
CREATE INDEX baselines_owner ON baselines (owner, created_at);
CREATE TABLE run_metrics (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    execution_id TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    case_key     TEXT NOT NULL,
    step_index   INTEGER NOT NULL,
    name         TEXT NOT NULL,
    value        REAL NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (execution_id, step_index, name)
);
CREATE INDEX run_metrics_run ON run_metrics (run_id);
CREATE TABLE user_secrets (
    user_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, name)
);
CREATE TABLE webhooks (
    id                TEXT PRIMARY KEY,
    task_id           TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    url               TEXT NOT NULL,
    events            TEXT NOT NULL,
    on_when           TEXT NOT NULL,
    format            TEXT NOT NULL,
    disabled          INTEGER NOT NULL DEFAULT 0,
    secret            BLOB NOT NULL,
    created_by        TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    secret_rotated_at INTEGER NOT NULL,
    UNIQUE (task_id, name)
);
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    task_id         TEXT NOT NULL,
    event           TEXT NOT NULL,
    run_id          TEXT NOT NULL DEFAULT '',
    case_id         TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    payload         BLOB,
    due_at          INTEGER NOT NULL,
    last_attempt_at INTEGER,
    response_code   INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    redelivery_of   TEXT NOT NULL DEFAULT '',
    lease           TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE status IN ('pending', 'delivering');
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
CREATE TABLE mcp_auto_sync (
    registration_id TEXT PRIMARY KEY REFERENCES mcp_servers (id) ON DELETE CASCADE,
    claimed_at      INTEGER NOT NULL
);
CREATE TABLE execution_attempts (
    execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    attempt      INTEGER NOT NULL,
    data         TEXT NOT NULL,
    PRIMARY KEY (execution_id, attempt)
);
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
CREATE TABLE saved_sessions (
    run_id     TEXT NOT NULL,
    name       TEXT NOT NULL,
    owner      TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX saved_sessions_expiry ON saved_sessions (expires_at);
CREATE TABLE llm_usage (
    user_id    TEXT NOT NULL,
    day        TEXT NOT NULL,
    tokens     INTEGER NOT NULL DEFAULT 0,
    calls      INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, day)
);
CREATE TABLE suite_sources (
    task_id    TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    source     TEXT NOT NULL,
    applied_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE case_versions (
    case_id     TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    title       TEXT NOT NULL,
    source      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    saved_by    TEXT NOT NULL,
    saved_at    INTEGER NOT NULL,
    via         TEXT NOT NULL,
    PRIMARY KEY (case_id, version)
);
INSERT INTO "cache_epoch" VALUES (1, 0);
INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1), (9, 1), (10, 1), (11, 1), (12, 1), (13, 1), (14, 1), (15, 1), (16, 1), (17, 1), (18, 1), (19, 1), (20, 1), (22, 1), (23, 1), (25, 1), (26, 1), (27, 1), (29, 1), (30, 1), (31, 1), (32, 1), (33, 1), (34, 1), (35, 1), (36, 1), (37, 1), (38, 1);
CREATE TRIGGER cache_epoch_tokens_insert AFTER INSERT ON tokens BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_tokens_update AFTER UPDATE ON tokens BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_tokens_delete AFTER DELETE ON tokens BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_tasks_insert AFTER INSERT ON tasks BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_tasks_update AFTER UPDATE ON tasks BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_tasks_delete AFTER DELETE ON tasks BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_task_shares_insert AFTER INSERT ON task_shares BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_task_shares_update AFTER UPDATE ON task_shares BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_task_shares_delete AFTER DELETE ON task_shares BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_teams_insert AFTER INSERT ON teams BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_teams_update AFTER UPDATE ON teams BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_teams_delete AFTER DELETE ON teams BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_team_members_insert AFTER INSERT ON team_members BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_team_members_update AFTER UPDATE ON team_members BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_team_members_delete AFTER DELETE ON team_members BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_cases_insert AFTER INSERT ON cases BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_cases_update AFTER UPDATE ON cases BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_cases_delete AFTER DELETE ON cases BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_runs_insert AFTER INSERT ON runs BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_runs_update AFTER UPDATE ON runs BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_runs_delete AFTER DELETE ON runs BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_executions_insert AFTER INSERT ON executions BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_executions_update AFTER UPDATE ON executions BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_executions_delete AFTER DELETE ON executions BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_mcp_servers_insert AFTER INSERT ON mcp_servers BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_mcp_servers_update AFTER UPDATE ON mcp_servers BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_mcp_servers_delete AFTER DELETE ON mcp_servers BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_mcp_tools_insert AFTER INSERT ON mcp_tools BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_mcp_tools_update AFTER UPDATE ON mcp_tools BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_mcp_tools_delete AFTER DELETE ON mcp_tools BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER teams_id_default AFTER INSERT ON teams WHEN NEW.id IS NULL
BEGIN UPDATE teams SET id = 'team_' || lower(hex(randomblob(13))) WHERE name = NEW.name; END;
CREATE TRIGGER task_shares_team_insert BEFORE INSERT ON task_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
CREATE TRIGGER task_shares_team_update BEFORE UPDATE ON task_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
CREATE TRIGGER asset_shares_team_insert BEFORE INSERT ON asset_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
CREATE TRIGGER asset_shares_team_update BEFORE UPDATE ON asset_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
CREATE TRIGGER cache_epoch_contract_alerts_insert AFTER INSERT ON contract_alerts BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_contract_alerts_update AFTER UPDATE ON contract_alerts BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_contract_alerts_delete AFTER DELETE ON contract_alerts BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_schedules_insert AFTER INSERT ON schedules BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_schedules_update AFTER UPDATE ON schedules BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER cache_epoch_schedules_delete AFTER DELETE ON schedules BEGIN UPDATE cache_epoch SET n = n + 1 WHERE id = 1; END;
