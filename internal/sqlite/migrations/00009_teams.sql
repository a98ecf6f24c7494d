-- +goose Up
-- Teams: members are read at every query, so membership changes take
-- effect at once. A task or asset shared with (or a task owned by)
-- 'team:NAME' is visible to the team's members.
CREATE TABLE teams (
    name       TEXT PRIMARY KEY,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE team_members (
    team     TEXT NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    user_id  TEXT NOT NULL,
    added_by TEXT NOT NULL,
    added_at INTEGER NOT NULL,
    PRIMARY KEY (team, user_id)
);
CREATE INDEX team_members_user ON team_members (user_id);

-- A team's MCP dependency list: what its members should register (never a
-- credential).
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

-- +goose Down
DROP TABLE task_transfers;
DROP TABLE team_servers;
DROP TABLE team_members;
DROP TABLE teams;
