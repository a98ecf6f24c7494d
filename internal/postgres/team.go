package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// lockTeam locks team's row for the rest of the transaction: changes to
// one team's members, roles and dependency list take turns, so a check of
// a role (or of the last owner) holds until the change commits. NOT_FOUND
// when there is no such team.
func lockTeam(ctx context.Context, tx pgx.Tx, team string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM teams WHERE name = $1 FOR UPDATE`, team).Scan(&one)
	return found(err, "team", team)
}

// shareTeamID returns the id of the team a share principal names (nil for
// a user or everyone), holding the team (FOR KEY SHARE) until the share
// commits: a share is bound to the team that exists when it is made.
// INVALID_ARGUMENT for a team that does not exist.
func shareTeamID(ctx context.Context, q querier, principal string) (any, error) {
	name, ok := duet.TeamOf(principal)
	if !ok {
		return nil, nil
	}
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM teams WHERE name = $1 FOR KEY SHARE`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.NoSuchTeam(name)
	}
	return id, mapErr(err)
}

// shareTeamIDs is shareTeamID for a list: the team id of each principal, in
// order (nil for users), for one INSERT from unnest.
func shareTeamIDs(ctx context.Context, q querier, principals []string) ([]*string, error) {
	out := make([]*string, len(principals))
	for i, p := range principals {
		id, err := shareTeamID(ctx, q, p)
		if err != nil {
			return nil, err
		}
		if id != nil {
			s := id.(string)
			out[i] = &s
		}
	}
	return out, nil
}

// CreateTeam creates team name with creator as its first member and owner.
func (d *DB) CreateTeam(ctx context.Context, creator, name string) (*duet.Team, error) {
	if err := storerules.CheckNewTeam(creator, name); err != nil {
		return nil, err
	}
	now := ts(d.now())
	id := duet.NewID("team")
	err := d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO teams (id, name, created_by, created_at) VALUES ($1, $2, $3, $4)`, id, name, creator, now); err != nil {
			if duet.ErrorCode(mapErr(err)) == duet.CodeConflict {
				return duet.Errorf(duet.CodeConflict, "a team named %q exists already", name)
			}
			return mapErr(err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO team_members (team, user_id, role, added_by, added_at) VALUES ($1, $2, $3, $2, $4)`, name, creator, duet.RoleOwner, now)
		return mapErr(err)
	})
	if err != nil {
		return nil, err
	}
	return &duet.Team{ID: id, Name: name, CreatedBy: creator, Members: []string{creator}, Roles: map[string]duet.TeamRole{creator: duet.RoleOwner},
		CreatedAt: now.UTC()}, nil
}

// TeamIDs returns the ids of the named teams that exist.
func (d *DB) TeamIDs(ctx context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := d.pool.Query(ctx, `SELECT name, id FROM teams WHERE name = ANY($1)`, names)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, id string
		if err := rows.Scan(&name, &id); err != nil {
			return nil, mapErr(err)
		}
		out[name] = id
	}
	return out, mapErr(rows.Err())
}

// AddTeamMember adds user to team as a member; by must be a member.
func (d *DB) AddTeamMember(ctx context.Context, by, team, user string) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		return storerules.AddTeamMember(ctx, d.teamTx(tx), by, team, user, ts(d.now()))
	})
}

// RemoveTeamMember removes user from team (storerules.RemoveTeamMember).
func (d *DB) RemoveTeamMember(ctx context.Context, by, team, user string) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		return storerules.RemoveTeamMember(ctx, d.teamTx(tx), by, team, user)
	})
}

// SetTeamRole gives a member of team a role (storerules.SetTeamRole).
func (d *DB) SetTeamRole(ctx context.Context, by, team, user string, role duet.TeamRole) error {
	if err := storerules.CheckTeamRole(role); err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		return storerules.SetTeamRole(ctx, d.teamTx(tx), by, team, user, role)
	})
}

// teamTx is storerules.TeamTx on a PostgreSQL transaction.
type teamTx struct {
	storerules.TeamMembers
	tx pgx.Tx
}

// teamTx is storerules.TeamTx on tx.
func (d *DB) teamTx(tx pgx.Tx) teamTx { return teamTx{storerules.TeamMembers{E: d.engineOn(tx)}, tx} }

func (t teamTx) LockTeam(ctx context.Context, team string) error { return lockTeam(ctx, t.tx, team) }

// DeleteTeam deletes team, its members, dependency list and shares; by
// must be an owner and the team must own no task.
func (d *DB) DeleteTeam(ctx context.Context, by, team string) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		// The lock waits for shares and transfers to the team in flight
		// (they hold it FOR KEY SHARE); the count below then sees them.
		if err := storerules.NeedRole(ctx, d.teamTx(tx), team, by, duet.RoleOwner, "deleting the team"); err != nil {
			return err
		}
		var owned int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE owner = $1`, duet.TeamPrincipal(team)).Scan(&owned); err != nil {
			return mapErr(err)
		}
		if owned > 0 {
			return duet.Errorf(duet.CodeConflict, "team %s owns %d task(s): hand them to a user first (duet task transfer TASK --to USER)", team, owned)
		}
		// Members, the dependency list and every share bound to the
		// team's id go with it (ON DELETE CASCADE).
		_, err := tx.Exec(ctx, `DELETE FROM teams WHERE name = $1`, team)
		return mapErr(err)
	})
}

// SaveTeamServer adds or replaces an entry of the team's dependency list.
func (d *DB) SaveTeamServer(ctx context.Context, s *duet.TeamServer) error {
	tools, err := storerules.CheckTeamServer(s)
	if err != nil {
		return err
	}
	s.AddedAt = ts(d.now()).UTC()
	return d.tx(ctx, func(tx pgx.Tx) error {
		if err := storerules.NeedRole(ctx, d.teamTx(tx), s.Team, s.AddedBy, duet.RoleMaintainer, "changing the MCP dependency list"); err != nil {
			return err
		}
		// Only maintainers and owners change the list: a member cannot
		// point a server others trust at another address, where the next
		// member registering it would send their credentials.
		_, err := tx.Exec(ctx, `INSERT INTO team_servers (team, name, url, server_key, description, tools, added_by, added_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (team, name) DO UPDATE SET url = excluded.url, server_key = excluded.server_key,
			description = excluded.description, tools = excluded.tools, added_by = excluded.added_by, added_at = excluded.added_at`,
			s.Team, s.Name, s.URL, s.ServerKey, s.Description, tools, s.AddedBy, s.AddedAt)
		return mapErr(err)
	})
}

// DeleteTeamServer removes an entry of the dependency list; by must be a
// maintainer or owner.
func (d *DB) DeleteTeamServer(ctx context.Context, by, team, name string) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		if err := storerules.NeedRole(ctx, d.teamTx(tx), team, by, duet.RoleMaintainer, "changing the MCP dependency list"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM team_servers WHERE team = $1 AND name = $2`, team, name)
		return changed(tag, err, storerules.NotFound("team server", name))
	})
}

// TransferTask makes to the owner of the task by owns.
func (d *DB) TransferTask(ctx context.Context, by, taskID, to string) (*duet.TaskTransfer, error) {
	if err := duet.ValidPrincipal(to); err != nil {
		return nil, err
	}
	var tr *duet.TaskTransfer
	err := d.tx(ctx, func(tx pgx.Tx) error {
		if err := ownsTask(ctx, tx, by, taskID); err != nil { // locks the task row
			return err
		}
		var from, name string
		if err := tx.QueryRow(ctx, `SELECT owner, name FROM tasks WHERE id = $1`, taskID).Scan(&from, &name); err != nil {
			return mapErr(err)
		}
		if from == to {
			return duet.Errorf(duet.CodeInvalidArgument, "%s owns task %s already", to, taskID)
		}
		if _, err := shareTeamID(ctx, tx, to); err != nil { // holds the team until the transfer commits
			return err
		}
		// Task names are unique per owner.
		var clash int
		err := tx.QueryRow(ctx, `SELECT 1 FROM tasks WHERE owner = $1 AND name = $2`, to, name).Scan(&clash)
		if err == nil {
			return duet.Errorf(duet.CodeConflict, "%s owns a task named %q already", to, name)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return mapErr(err)
		}
		now := ts(d.now())
		if _, err := tx.Exec(ctx, `UPDATE tasks SET owner = $1, updated_at = $2 WHERE id = $3`, to, now, taskID); err != nil {
			return mapErr(err)
		}
		// The new owner does not also need a share.
		if _, err := tx.Exec(ctx, `DELETE FROM task_shares WHERE task_id = $1 AND user_id = $2`, taskID, to); err != nil {
			return mapErr(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO task_transfers (task_id, from_owner, to_owner, by_user, at) VALUES ($1, $2, $3, $4, $5)`,
			taskID, from, to, by, now); err != nil {
			return mapErr(err)
		}
		tr = &duet.TaskTransfer{TaskID: taskID, From: from, To: to, By: by, At: now.UTC()}
		return nil
	})
	return tr, err
}

// FindTaskTransfers returns the transfers of a task viewer may see.
func (d *DB) FindTaskTransfers(ctx context.Context, viewer, taskID string) ([]*duet.TaskTransfer, error) {
	if _, err := d.FindTaskByID(ctx, viewer, taskID); err != nil {
		return nil, err
	}
	return all(ctx, d.pool, storerules.ScanTaskTransfer, `SELECT task_id, from_owner, to_owner, by_user, at FROM task_transfers WHERE task_id = $1 ORDER BY id`, taskID)
}
