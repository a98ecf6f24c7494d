package storerules

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/serverkey"
)

// TeamTx is what the rules of a team's members ask of one engine's
// transaction.
type TeamTx interface {
	// LockTeam makes changes to one team's members, roles and dependency
	// list take turns where the engine has row locks (NOT_FOUND for no
	// such team); a single-writer engine has nothing to do.
	LockTeam(ctx context.Context, team string) error
	// Role returns user's role in team: NOT_FOUND unless a member.
	Role(ctx context.Context, team, user string) (duet.TeamRole, error)
	// OtherOwners counts the owners of team other than user.
	OtherOwners(ctx context.Context, team, user string) (int, error)
	// AddMember adds user to team with role, added by by at now, unless
	// user is a member already.
	AddMember(ctx context.Context, team, user string, role duet.TeamRole, by string, now time.Time) error
	DeleteMember(ctx context.Context, team, user string) error
	SetRole(ctx context.Context, team, user string, role duet.TeamRole) error
}

// NeedRole locks team and fails unless user has at least role in it:
// NOT_FOUND for a non-member, PERMISSION_DENIED (naming the role needed and
// what) for a member without it.
func NeedRole(ctx context.Context, tx TeamTx, team, user string, role duet.TeamRole, what string) error {
	if err := tx.LockTeam(ctx, team); err != nil {
		return err
	}
	has, err := tx.Role(ctx, team, user)
	if err != nil {
		return err
	}
	return duet.CheckTeamRole(team, user, has, role, what)
}

// memberRole is user's role in team, NOT_FOUND naming both unless a member.
func memberRole(ctx context.Context, tx TeamTx, team, user string) (duet.TeamRole, error) {
	role, err := tx.Role(ctx, team, user)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		return "", duet.Errorf(duet.CodeNotFound, "%s is not a member of team %s", user, team)
	}
	return role, err
}

// keepAnOwner fails with CONFLICT when user is team's only owner.
func keepAnOwner(ctx context.Context, tx TeamTx, team, user, what string) error {
	others, err := tx.OtherOwners(ctx, team, user)
	if err != nil {
		return err
	}
	if others == 0 {
		return duet.LastOwner(team, user, what)
	}
	return nil
}

// AddTeamMember adds user to team as a member through tx; by must be a
// member (of any role). A member already keeps their role.
func AddTeamMember(ctx context.Context, tx TeamTx, by, team, user string, now time.Time) error {
	if err := duet.ValidUserID(user); err != nil {
		return err
	}
	if err := NeedRole(ctx, tx, team, by, duet.RoleMember, "adding a member"); err != nil {
		return err
	}
	return tx.AddMember(ctx, team, user, duet.RoleMember, by, now)
}

// RemoveTeamMember removes user from team through tx: a member leaving, or
// removed by a maintainer (a member) or an owner (anyone). The last owner
// stays.
func RemoveTeamMember(ctx context.Context, tx TeamTx, by, team, user string) error {
	// Changes to one team take turns, so two removals cannot each take
	// away the other's last owner.
	if err := tx.LockTeam(ctx, team); err != nil {
		return err
	}
	byRole, err := tx.Role(ctx, team, by)
	if err != nil {
		return err
	}
	role, err := memberRole(ctx, tx, team, user)
	if err != nil {
		return err
	}
	if err := duet.CheckTeamRemoval(team, by, byRole, user, role); err != nil {
		return err
	}
	if role == duet.RoleOwner {
		if err := keepAnOwner(ctx, tx, team, user, "leave or be removed"); err != nil {
			return err
		}
	}
	return tx.DeleteMember(ctx, team, user)
}

// CheckTeamRole refuses a role that does not exist.
func CheckTeamRole(role duet.TeamRole) error {
	if !duet.ValidTeamRole(role) {
		return duet.Errorf(duet.CodeInvalidArgument, "role %q: want owner, maintainer or member", role)
	}
	return nil
}

// SetTeamRole gives a member of team a role through tx; by must be an
// owner, and the last owner stays one.
func SetTeamRole(ctx context.Context, tx TeamTx, by, team, user string, role duet.TeamRole) error {
	if err := NeedRole(ctx, tx, team, by, duet.RoleOwner, "changing roles"); err != nil {
		return err
	}
	old, err := memberRole(ctx, tx, team, user)
	if err != nil {
		return err
	}
	if old == duet.RoleOwner && role != duet.RoleOwner {
		if err := keepAnOwner(ctx, tx, team, user, "be demoted"); err != nil {
			return err
		}
	}
	return tx.SetRole(ctx, team, user, role)
}

// CheckTeamServer checks an entry of a team's dependency list and puts its
// address in the form a member can register: normalized, with no
// credential in it, and its server key. It returns the tools as stored.
func CheckTeamServer(s *duet.TeamServer) (tools string, err error) {
	if !duet.ValidAssetName(s.Name) {
		return "", duet.Errorf(duet.CodeInvalidArgument, "server name %q: use lower-case letters, digits, '.', '_' or '-'", s.Name)
	}
	key, err := serverkey.Key(s.URL)
	if err != nil {
		return "", err
	}
	norm, err := serverkey.Normalize(s.URL)
	if err != nil {
		return "", err
	}
	s.URL, s.ServerKey = norm, key
	b, err := s.MarshalTools()
	if err != nil {
		return "", fmt.Errorf("encoding tools: %w", err)
	}
	return string(b), nil
}

// CheckNewTeam refuses a team name or creator no engine may store.
func CheckNewTeam(creator, name string) error {
	if !duet.ValidTeamName(name) {
		return duet.Errorf(duet.CodeInvalidArgument, "team name %q: use lower-case letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)", name)
	}
	return duet.ValidUserID(creator)
}

// TeamRole returns user's role in team on e, failing with NOT_FOUND unless
// user is a member: a team one is not in looks like one that does not
// exist.
func TeamRole(ctx context.Context, e Engine, team, user string) (duet.TeamRole, error) {
	var role duet.TeamRole
	err := e.Read(ctx, []any{&role}, `SELECT role FROM team_members WHERE team = $1 AND user_id = $2`, team, user)
	if errors.Is(err, sql.ErrNoRows) {
		return "", NotFound("team", team)
	}
	return role, err
}

// TeamMembers is the part of TeamTx that is the same on every engine, on
// an Engine whose statements run in the transaction; a driver adds
// LockTeam.
type TeamMembers struct{ E Engine }

// Role is TeamTx's Role (TeamRole).
func (t TeamMembers) Role(ctx context.Context, team, user string) (duet.TeamRole, error) {
	return TeamRole(ctx, t.E, team, user)
}

// OtherOwners counts the owners of team other than user.
func (t TeamMembers) OtherOwners(ctx context.Context, team, user string) (int, error) {
	var n int
	err := t.E.Read(ctx, []any{&n}, `SELECT count(*) FROM team_members WHERE team = $1 AND role = $2 AND user_id <> $3`, team, duet.RoleOwner, user)
	return n, err
}

// AddMember adds user to team with role, added by by at now, unless user
// is a member already.
func (t TeamMembers) AddMember(ctx context.Context, team, user string, role duet.TeamRole, by string, now time.Time) error {
	_, err := t.E.Exec(ctx, `INSERT INTO team_members (team, user_id, role, added_by, added_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
		team, user, role, by, t.E.Stored(now))
	return err
}

// DeleteMember removes user from team.
func (t TeamMembers) DeleteMember(ctx context.Context, team, user string) error {
	_, err := t.E.Exec(ctx, `DELETE FROM team_members WHERE team = $1 AND user_id = $2`, team, user)
	return err
}

// SetRole gives user role in team.
func (t TeamMembers) SetRole(ctx context.Context, team, user string, role duet.TeamRole) error {
	_, err := t.E.Exec(ctx, `UPDATE team_members SET role = $1 WHERE team = $2 AND user_id = $3`, role, team, user)
	return err
}

// Teams is the part of duet.TeamStore that is the same on every engine:
// the reads of teams and their dependency lists.
type Teams struct{ E Engine }

// FindTeam returns a team viewer is a member of. Returns NOT_FOUND.
func (s Teams) FindTeam(ctx context.Context, viewer, name string) (*duet.Team, error) {
	if _, err := TeamRole(ctx, s.E, name, viewer); err != nil {
		return nil, err
	}
	teams, err := s.findTeams(ctx, `t.name = $1`, name)
	if err != nil {
		return nil, err
	}
	if len(teams) == 0 {
		return nil, NotFound("team", name)
	}
	return teams[0], nil
}

// FindTeams returns the teams user is a member of.
func (s Teams) FindTeams(ctx context.Context, user string) ([]*duet.Team, error) {
	return s.findTeams(ctx, `t.name IN (SELECT team FROM team_members WHERE user_id = $1)`, user)
}

// findTeams reads the teams cond (on teams t, of the one parameter arg)
// selects, by name, with their members.
func (s Teams) findTeams(ctx context.Context, cond string, arg any) ([]*duet.Team, error) {
	var out []*duet.Team
	err := s.E.Query(ctx, func(r Row) error {
		var id, name, by, member string
		var role duet.TeamRole
		var created time.Time
		if err := r.Scan(&id, &name, &by, TimeOf(&created), &member, &role); err != nil {
			return err
		}
		if len(out) == 0 || out[len(out)-1].Name != name {
			out = append(out, &duet.Team{ID: id, Name: name, CreatedBy: by, CreatedAt: created, Roles: map[string]duet.TeamRole{}})
		}
		t := out[len(out)-1]
		t.Members = append(t.Members, member)
		t.Roles[member] = role
		return nil
	}, `SELECT t.id, t.name, t.created_by, t.created_at, m.user_id, m.role FROM teams t
		JOIN team_members m ON m.team = t.name WHERE `+cond+` ORDER BY t.name, m.user_id`, arg)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FindTeamServers returns the team's dependency list as viewer, a member,
// sees it. Returns NOT_FOUND.
func (s Teams) FindTeamServers(ctx context.Context, viewer, team string) ([]*duet.TeamServer, error) {
	if _, err := TeamRole(ctx, s.E, team, viewer); err != nil {
		return nil, err
	}
	return All(ctx, s.E, func(r Row) (*duet.TeamServer, error) {
		var s duet.TeamServer
		var tools string
		if err := r.Scan(&s.Team, &s.Name, &s.URL, &s.ServerKey, &s.Description, &tools, &s.AddedBy, TimeOf(&s.AddedAt)); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(tools), &s.Tools); err != nil {
			return nil, fmt.Errorf("team server %s/%s: tools: %w", s.Team, s.Name, err)
		}
		return &s, nil
	}, `SELECT team, name, url, server_key, description, tools, added_by, added_at
		FROM team_servers WHERE team = $1 ORDER BY name`, team)
}

// ScanTaskTransfer reads a transfer of (task_id, from_owner, to_owner,
// by_user, at).
func ScanTaskTransfer(r Row) (*duet.TaskTransfer, error) {
	var t duet.TaskTransfer
	return scanned(&t, r.Scan(&t.TaskID, &t.From, &t.To, &t.By, TimeOf(&t.At)))
}
