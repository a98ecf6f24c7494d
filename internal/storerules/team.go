package storerules

import (
	"context"
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
