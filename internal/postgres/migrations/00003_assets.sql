-- +goose Up
-- AI assets (skills, rules, prompts), their versions and sharing, and the
-- records of the test agent's generations (sqlite's 00003).

CREATE TABLE assets (
    id         TEXT COLLATE "C" PRIMARY KEY,
    owner      TEXT COLLATE "C" NOT NULL,
    kind       TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    version    INTEGER NOT NULL, -- the latest version
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (owner, kind, name)
);
CREATE INDEX assets_kind_name ON assets (kind, name);

CREATE TABLE asset_versions (
    asset_id    TEXT COLLATE "C" NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (asset_id, version)
);

-- user_id '*' shares an asset with everyone.
CREATE TABLE asset_shares (
    asset_id   TEXT COLLATE "C" NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    user_id    TEXT COLLATE "C" NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (asset_id, user_id)
);
CREATE INDEX asset_shares_user ON asset_shares (user_id);

CREATE TABLE generations (
    id                TEXT COLLATE "C" PRIMARY KEY,
    task_id           TEXT COLLATE "C" NOT NULL,
    user_id           TEXT COLLATE "C" NOT NULL,
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
    duration_ms       BIGINT NOT NULL DEFAULT 0,
    case_id           TEXT NOT NULL DEFAULT '',
    case_version      INTEGER NOT NULL DEFAULT 0,
    trace_id          TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX generations_user ON generations (user_id, id);
CREATE INDEX generations_task ON generations (task_id, id);
