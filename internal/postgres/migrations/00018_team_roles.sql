-- +goose Up
-- Team roles, team identities and shares bound to them (mirrors SQLite's
-- 00018; issue 25, points 3 and 4).
--
-- A team's id is its identity: shares with "team:NAME" carry the id of
-- the team they were made with (team_id, deleted with the team), so a team
-- deleted and re-created under the same name by someone else inherits no
-- share. Existing teams (and a row inserted by hand) get a random id.
ALTER TABLE teams ADD COLUMN id TEXT COLLATE "C" NOT NULL DEFAULT ('team_' || md5(random()::text || clock_timestamp()::text));
ALTER TABLE teams ADD CONSTRAINT teams_id_key UNIQUE (id);

-- Roles: owner, maintainer, member. The creator is the first owner; where
-- the creator left, the earliest member becomes the owner. Everyone else
-- is a member.
ALTER TABLE team_members ADD COLUMN role TEXT COLLATE "C" NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'maintainer', 'member'));
UPDATE team_members m SET role = 'owner' FROM teams t WHERE t.name = m.team AND t.created_by = m.user_id;
UPDATE team_members m SET role = 'owner'
 WHERE NOT EXISTS (SELECT 1 FROM team_members o WHERE o.team = m.team AND o.role = 'owner')
   AND m.user_id = (SELECT f.user_id FROM team_members f WHERE f.team = m.team ORDER BY f.added_at, f.user_id LIMIT 1);

-- Shares with a team carry its id. A share naming a team that does not
-- exist granted nothing and would have granted everything to whoever
-- created that team first: it goes.
ALTER TABLE task_shares ADD COLUMN team_id TEXT COLLATE "C" REFERENCES teams (id) ON DELETE CASCADE;
ALTER TABLE asset_shares ADD COLUMN team_id TEXT COLLATE "C" REFERENCES teams (id) ON DELETE CASCADE;
DELETE FROM task_shares s WHERE left(s.user_id, 5) = 'team:'
   AND NOT EXISTS (SELECT 1 FROM teams t WHERE 'team:' || t.name = s.user_id);
DELETE FROM asset_shares s WHERE left(s.user_id, 5) = 'team:'
   AND NOT EXISTS (SELECT 1 FROM teams t WHERE 'team:' || t.name = s.user_id);
UPDATE task_shares s SET team_id = t.id FROM teams t WHERE 'team:' || t.name = s.user_id;
UPDATE asset_shares s SET team_id = t.id FROM teams t WHERE 'team:' || t.name = s.user_id;
CREATE INDEX task_shares_team ON task_shares (team_id);
CREATE INDEX asset_shares_team ON asset_shares (team_id);
-- A share names a team exactly when it carries a team's id, whoever
-- writes it.
ALTER TABLE task_shares ADD CONSTRAINT task_shares_team_id CHECK ((left(user_id, 5) = 'team:') = (team_id IS NOT NULL));
ALTER TABLE asset_shares ADD CONSTRAINT asset_shares_team_id CHECK ((left(user_id, 5) = 'team:') = (team_id IS NOT NULL));

-- +goose Down
ALTER TABLE asset_shares DROP CONSTRAINT asset_shares_team_id;
ALTER TABLE task_shares DROP CONSTRAINT task_shares_team_id;
DROP INDEX asset_shares_team;
DROP INDEX task_shares_team;
ALTER TABLE asset_shares DROP COLUMN team_id;
ALTER TABLE task_shares DROP COLUMN team_id;
ALTER TABLE team_members DROP COLUMN role;
ALTER TABLE teams DROP CONSTRAINT teams_id_key;
ALTER TABLE teams DROP COLUMN id;
