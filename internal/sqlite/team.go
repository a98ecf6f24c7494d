package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/serverkey"
)

var _ duet.TeamStore = (*DB)(nil)

// isMember reports whether user is a member of team.
func isMember(ctx context.Context, q querier, team, user string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM team_members WHERE team = ? AND user_id = ?`, team, user).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, mapErr(err)
}

// memberOf fails with NOT_FOUND unless user is a member of team: a team
// one is not in looks like one that does not exist.
func memberOf(ctx context.Context, q querier, team, user string) error {
	ok, err := isMember(ctx, q, team, user)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("team", team)
	}
	return nil
}

// CreateTeam creates team name with creator as its first member.
func (d *DB) CreateTeam(ctx context.Context, creator, name string) (*duet.Team, error) {
	if !duet.ValidTeamName(name) {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "team name %q: use lower-case letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)", name)
	}
	if !validUser(creator) {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "%q is not a user id", creator)
	}
	now := d.now()
	err := d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO teams (name, created_by, created_at) VALUES (?, ?, ?)`, name, creator, micros(now)); err != nil {
			if duet.ErrorCode(mapErr(err)) == duet.CodeConflict {
				return duet.Errorf(duet.CodeConflict, "a team named %q exists already", name)
			}
			return mapErr(err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO team_members (team, user_id, added_by, added_at) VALUES (?, ?, ?, ?)`, name, creator, creator, micros(now))
		return mapErr(err)
	})
	if err != nil {
		return nil, err
	}
	return &duet.Team{Name: name, CreatedBy: creator, Members: []string{creator}, CreatedAt: fromMicros(micros(now))}, nil
}

// FindTeam returns a team viewer is a member of.
func (d *DB) FindTeam(ctx context.Context, viewer, name string) (*duet.Team, error) {
	if err := memberOf(ctx, d.q, name, viewer); err != nil {
		return nil, err
	}
	teams, err := d.findTeams(ctx, `t.name = ?`, name)
	if err != nil {
		return nil, err
	}
	if len(teams) == 0 {
		return nil, notFound("team", name)
	}
	return teams[0], nil
}

// FindTeams returns the teams user is a member of.
func (d *DB) FindTeams(ctx context.Context, user string) ([]*duet.Team, error) {
	return d.findTeams(ctx, `t.name IN (SELECT team FROM team_members WHERE user_id = ?)`, user)
}

func (d *DB) findTeams(ctx context.Context, cond string, arg any) ([]*duet.Team, error) {
	rows, err := d.q.QueryContext(ctx, `SELECT t.name, t.created_by, t.created_at, m.user_id FROM teams t
		JOIN team_members m ON m.team = t.name WHERE `+cond+` ORDER BY t.name, m.user_id`, arg)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []*duet.Team
	for rows.Next() {
		var name, by, member string
		var created int64
		if err := rows.Scan(&name, &by, &created, &member); err != nil {
			return nil, mapErr(err)
		}
		if len(out) == 0 || out[len(out)-1].Name != name {
			out = append(out, &duet.Team{Name: name, CreatedBy: by, CreatedAt: fromMicros(created)})
		}
		t := out[len(out)-1]
		t.Members = append(t.Members, member)
	}
	return out, mapErr(rows.Err())
}

// AddTeamMember adds user to team; by must be a member.
func (d *DB) AddTeamMember(ctx context.Context, by, team, user string) error {
	if !validUser(user) {
		return duet.Errorf(duet.CodeInvalidArgument, "%q is not a user id (1 to 128 characters, no spaces)", user)
	}
	if _, isTeam := duet.TeamOf(user); isTeam {
		return duet.Errorf(duet.CodeInvalidArgument, "a team's members are users, not teams")
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		if err := memberOf(ctx, tx, team, by); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO team_members (team, user_id, added_by, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			team, user, by, micros(d.now()))
		return mapErr(err)
	})
}

// RemoveTeamMember removes user from team; by must be a member.
func (d *DB) RemoveTeamMember(ctx context.Context, by, team, user string) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		if err := memberOf(ctx, tx, team, by); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM team_members WHERE team = ?`, team).Scan(&n); err != nil {
			return mapErr(err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM team_members WHERE team = ? AND user_id = ?`, team, user)
		if err != nil {
			return mapErr(err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return duet.Errorf(duet.CodeNotFound, "%s is not a member of team %s", user, team)
		}
		if n == 1 {
			return duet.Errorf(duet.CodeConflict, "%s is the last member of team %s; a team keeps at least one", user, team)
		}
		return nil
	})
}

// SaveTeamServer adds or replaces an entry of the team's dependency list.
func (d *DB) SaveTeamServer(ctx context.Context, s *duet.TeamServer) error {
	if !duet.ValidAssetName(s.Name) {
		return duet.Errorf(duet.CodeInvalidArgument, "server name %q: use lower-case letters, digits, '.', '_' or '-'", s.Name)
	}
	// The address must be one a member can register: normalized, with no
	// credential in it.
	key, err := serverkey.Key(s.URL)
	if err != nil {
		return err
	}
	norm, err := serverkey.Normalize(s.URL)
	if err != nil {
		return err
	}
	s.URL, s.ServerKey = norm, key
	tools, err := s.MarshalTools()
	if err != nil {
		return fmt.Errorf("encoding tools: %w", err)
	}
	s.AddedAt = fromMicros(micros(d.now()))
	return d.tx(ctx, func(tx *sql.Tx) error {
		if err := memberOf(ctx, tx, s.Team, s.AddedBy); err != nil {
			return err
		}
		// An entry is replaced only by whoever listed it (or anyone once
		// they left the team): a teammate cannot point a server others
		// trusted at another address, where their credentials would go.
		res, err := tx.ExecContext(ctx, `INSERT INTO team_servers (team, name, url, server_key, description, tools, added_by, added_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (team, name) DO UPDATE SET url = excluded.url, server_key = excluded.server_key,
			description = excluded.description, tools = excluded.tools, added_by = excluded.added_by, added_at = excluded.added_at
			WHERE team_servers.added_by = excluded.added_by
			   OR NOT EXISTS (SELECT 1 FROM team_members m WHERE m.team = team_servers.team AND m.user_id = team_servers.added_by)`,
			s.Team, s.Name, s.URL, s.ServerKey, s.Description, string(tools), s.AddedBy, micros(s.AddedAt))
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return teamServerTaken(ctx, tx, s.Team, s.Name)
		}
		return nil
	})
}

// teamServerTaken is the CONFLICT of a change to an entry another member
// listed.
func teamServerTaken(ctx context.Context, tx *sql.Tx, team, name string) error {
	var by string
	if err := tx.QueryRowContext(ctx, `SELECT added_by FROM team_servers WHERE team = ? AND name = ?`, team, name).Scan(&by); err != nil {
		return mapErr(err)
	}
	return duet.Errorf(duet.CodeConflict, "team %s's server %q was listed by %s: only they can replace or remove it (or anyone once they left the team); list yours under another name", team, name, by)
}

// FindTeamServers returns the team's dependency list as viewer sees it.
func (d *DB) FindTeamServers(ctx context.Context, viewer, team string) ([]*duet.TeamServer, error) {
	if err := memberOf(ctx, d.q, team, viewer); err != nil {
		return nil, err
	}
	rows, err := d.q.QueryContext(ctx, `SELECT team, name, url, server_key, description, tools, added_by, added_at
		FROM team_servers WHERE team = ? ORDER BY name`, team)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []*duet.TeamServer{}
	for rows.Next() {
		var s duet.TeamServer
		var tools string
		var at int64
		if err := rows.Scan(&s.Team, &s.Name, &s.URL, &s.ServerKey, &s.Description, &tools, &s.AddedBy, &at); err != nil {
			return nil, mapErr(err)
		}
		s.AddedAt = fromMicros(at)
		if err := json.Unmarshal([]byte(tools), &s.Tools); err != nil {
			return nil, fmt.Errorf("team server %s/%s: tools: %w", s.Team, s.Name, err)
		}
		out = append(out, &s)
	}
	return out, mapErr(rows.Err())
}

// DeleteTeamServer removes an entry of the dependency list.
func (d *DB) DeleteTeamServer(ctx context.Context, by, team, name string) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		if err := memberOf(ctx, tx, team, by); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM team_servers WHERE team = ? AND name = ?
			AND (added_by = ? OR NOT EXISTS (SELECT 1 FROM team_members m WHERE m.team = team_servers.team AND m.user_id = team_servers.added_by))`, team, name, by)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM team_servers WHERE team = ? AND name = ?`, team, name).Scan(&one); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return notFound("team server", name)
				}
				return mapErr(err)
			}
			return teamServerTaken(ctx, tx, team, name)
		}
		return nil
	})
}

// TransferTask makes to the owner of the task by owns.
func (d *DB) TransferTask(ctx context.Context, by, taskID, to string) (*duet.TaskTransfer, error) {
	if !validUser(to) {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "%q is not a user id or team:NAME", to)
	}
	var tr *duet.TaskTransfer
	err := d.tx(ctx, func(tx *sql.Tx) error {
		if err := ownsTask(ctx, tx, by, taskID); err != nil {
			return err
		}
		var from, name string
		if err := tx.QueryRowContext(ctx, `SELECT owner, name FROM tasks WHERE id = ?`, taskID).Scan(&from, &name); err != nil {
			return mapErr(err)
		}
		if from == to {
			return duet.Errorf(duet.CodeInvalidArgument, "%s owns task %s already", to, taskID)
		}
		if team, ok := duet.TeamOf(to); ok {
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM teams WHERE name = ?`, team).Scan(&one); errors.Is(err, sql.ErrNoRows) {
				return duet.Errorf(duet.CodeInvalidArgument, "there is no team %q", team)
			} else if err != nil {
				return mapErr(err)
			}
		}
		// Task names are unique per owner.
		var clash int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM tasks WHERE owner = ? AND name = ?`, to, name).Scan(&clash)
		if err == nil {
			return duet.Errorf(duet.CodeConflict, "%s owns a task named %q already", to, name)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return mapErr(err)
		}
		now := d.now()
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET owner = ?, updated_at = ? WHERE id = ?`, to, micros(now), taskID); err != nil {
			return mapErr(err)
		}
		// The new owner does not also need a share.
		if _, err := tx.ExecContext(ctx, `DELETE FROM task_shares WHERE task_id = ? AND user_id = ?`, taskID, to); err != nil {
			return mapErr(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO task_transfers (task_id, from_owner, to_owner, by_user, at) VALUES (?, ?, ?, ?, ?)`,
			taskID, from, to, by, micros(now)); err != nil {
			return mapErr(err)
		}
		tr = &duet.TaskTransfer{TaskID: taskID, From: from, To: to, By: by, At: fromMicros(micros(now))}
		return nil
	})
	return tr, err
}

// FindTaskTransfers returns the transfers of a task viewer may see.
func (d *DB) FindTaskTransfers(ctx context.Context, viewer, taskID string) ([]*duet.TaskTransfer, error) {
	if _, err := d.FindTaskByID(ctx, viewer, taskID); err != nil {
		return nil, err
	}
	rows, err := d.q.QueryContext(ctx, `SELECT task_id, from_owner, to_owner, by_user, at FROM task_transfers WHERE task_id = ? ORDER BY id`, taskID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []*duet.TaskTransfer{}
	for rows.Next() {
		var t duet.TaskTransfer
		var at int64
		if err := rows.Scan(&t.TaskID, &t.From, &t.To, &t.By, &at); err != nil {
			return nil, mapErr(err)
		}
		t.At = fromMicros(at)
		out = append(out, &t)
	}
	return out, mapErr(rows.Err())
}
