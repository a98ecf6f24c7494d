-- +goose Up
-- Team roles, team identities and shares bound to them (issue 25, point 3
-- and 4).
--
-- A team's id is its identity: shares with "team:NAME" carry the id of
-- the team they were made with (team_id, deleted with the team), so a team
-- deleted and re-created under the same name by someone else inherits no
-- share. Existing teams get a random id; a row inserted without one (by
-- hand) gets one from the trigger.
ALTER TABLE teams ADD COLUMN id TEXT;
UPDATE teams SET id = 'team_' || lower(hex(randomblob(13)));
CREATE UNIQUE INDEX teams_id ON teams (id);
-- +goose StatementBegin
CREATE TRIGGER teams_id_default AFTER INSERT ON teams WHEN NEW.id IS NULL
BEGIN UPDATE teams SET id = 'team_' || lower(hex(randomblob(13))) WHERE name = NEW.name; END;
-- +goose StatementEnd

-- Roles: owner, maintainer, member. The creator is the first owner; where
-- the creator left, the earliest member becomes the owner. Everyone else
-- is a member.
ALTER TABLE team_members ADD COLUMN role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'maintainer', 'member'));
UPDATE team_members SET role = 'owner'
 WHERE user_id = (SELECT t.created_by FROM teams t WHERE t.name = team_members.team);
UPDATE team_members SET role = 'owner'
 WHERE NOT EXISTS (SELECT 1 FROM team_members o WHERE o.team = team_members.team AND o.role = 'owner')
   AND user_id = (SELECT m.user_id FROM team_members m WHERE m.team = team_members.team ORDER BY m.added_at, m.user_id LIMIT 1);

-- Shares with a team carry its id. A share naming a team that does not
-- exist granted nothing and would have granted everything to whoever
-- created that team first: it goes.
ALTER TABLE task_shares ADD COLUMN team_id TEXT REFERENCES teams (id) ON DELETE CASCADE;
ALTER TABLE asset_shares ADD COLUMN team_id TEXT REFERENCES teams (id) ON DELETE CASCADE;
DELETE FROM task_shares WHERE substr(user_id, 1, 5) = 'team:'
   AND NOT EXISTS (SELECT 1 FROM teams t WHERE 'team:' || t.name = task_shares.user_id);
DELETE FROM asset_shares WHERE substr(user_id, 1, 5) = 'team:'
   AND NOT EXISTS (SELECT 1 FROM teams t WHERE 'team:' || t.name = asset_shares.user_id);
UPDATE task_shares SET team_id = (SELECT t.id FROM teams t WHERE 'team:' || t.name = task_shares.user_id)
 WHERE substr(user_id, 1, 5) = 'team:';
UPDATE asset_shares SET team_id = (SELECT t.id FROM teams t WHERE 'team:' || t.name = asset_shares.user_id)
 WHERE substr(user_id, 1, 5) = 'team:';
CREATE INDEX task_shares_team ON task_shares (team_id);
CREATE INDEX asset_shares_team ON asset_shares (team_id);
-- A share names a team exactly when it carries a team's id, whoever
-- writes it.
-- +goose StatementBegin
CREATE TRIGGER task_shares_team_insert BEFORE INSERT ON task_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER task_shares_team_update BEFORE UPDATE ON task_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER asset_shares_team_insert BEFORE INSERT ON asset_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER asset_shares_team_update BEFORE UPDATE ON asset_shares
WHEN (substr(NEW.user_id, 1, 5) = 'team:') <> (NEW.team_id IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'a share with team:NAME carries the team id (and only such a share does)'); END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER asset_shares_team_update;
DROP TRIGGER asset_shares_team_insert;
DROP TRIGGER task_shares_team_update;
DROP TRIGGER task_shares_team_insert;
DROP INDEX asset_shares_team;
DROP INDEX task_shares_team;
ALTER TABLE asset_shares DROP COLUMN team_id;
ALTER TABLE task_shares DROP COLUMN team_id;
ALTER TABLE team_members DROP COLUMN role;
DROP TRIGGER teams_id_default;
DROP INDEX teams_id;
ALTER TABLE teams DROP COLUMN id;
