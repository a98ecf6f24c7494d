-- +goose Up
-- Teams (mirrors SQLite's 00009): members are read at every query, so
-- membership changes take effect at once. A task or asset shared with (or a
-- task owned by) 'team:NAME' is visible to the team's members.
CREATE TABLE teams (
    name       TEXT COLLATE "C" PRIMARY KEY,
    created_by TEXT COLLATE "C" NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE team_members (
    team     TEXT COLLATE "C" NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    user_id  TEXT COLLATE "C" NOT NULL,
    added_by TEXT COLLATE "C" NOT NULL,
    added_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (team, user_id)
);
CREATE INDEX team_members_user ON team_members (user_id);

-- A team's MCP dependency list: what its members should register (never a
-- credential).
CREATE TABLE team_servers (
    team        TEXT COLLATE "C" NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    name        TEXT COLLATE "C" NOT NULL,
    url         TEXT NOT NULL,
    server_key  TEXT COLLATE "C" NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    tools       TEXT NOT NULL DEFAULT '[]',
    added_by    TEXT COLLATE "C" NOT NULL,
    added_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (team, name)
);

CREATE TABLE task_transfers (
    id         BIGSERIAL PRIMARY KEY,
    task_id    TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    from_owner TEXT COLLATE "C" NOT NULL,
    to_owner   TEXT COLLATE "C" NOT NULL,
    by_user    TEXT COLLATE "C" NOT NULL,
    at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX task_transfers_task ON task_transfers (task_id, id);
