package api

import (
	"context"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/serverkey"
)

// TeamList is the teams the caller is a member of.
type TeamList struct {
	Teams []*duet.Team `json:"teams"`
}

// ListTeams lists the caller's teams.
func (s *Service) ListTeams(ctx context.Context, c duet.Caller) (TeamList, error) {
	return govern(ctx, s, c, "listTeams", nil, func(ctx context.Context) (TeamList, error) {
		t, err := s.d.Store.FindTeams(ctx, c.UserID)
		return TeamList{Teams: nonNil(t)}, err
	})
}

// TeamIn names a team.
type TeamIn struct {
	Name string `json:"name" jsonschema:"lower-case letters, digits, '.', '_' and '-'"`
}

// CreateTeam creates a team with the caller as its first member and owner.
// Returns INVALID_ARGUMENT, CONFLICT.
func (s *Service) CreateTeam(ctx context.Context, c duet.Caller, in TeamIn) (*duet.Team, error) {
	return govern(ctx, s, c, "createTeam", in, func(ctx context.Context) (*duet.Team, error) {
		return s.d.Store.CreateTeam(ctx, c.UserID, strings.TrimSpace(in.Name))
	})
}

// TeamDetail is a team with its MCP dependency list.
type TeamDetail struct {
	Team    *duet.Team         `json:"team"`
	Servers []*duet.TeamServer `json:"servers" jsonschema:"the MCP servers its members should register (addresses and tools, never credentials)"`
}

// GetTeam returns a team the caller is a member of. Returns NOT_FOUND.
func (s *Service) GetTeam(ctx context.Context, c duet.Caller, name string) (TeamDetail, error) {
	return govern(ctx, s, c, "getTeam", nil, func(ctx context.Context) (TeamDetail, error) {
		return s.teamDetail(ctx, c, name)
	})
}

func (s *Service) teamDetail(ctx context.Context, c duet.Caller, name string) (TeamDetail, error) {
	t, err := s.d.Store.FindTeam(ctx, c.UserID, name)
	if err != nil {
		return TeamDetail{}, err
	}
	deps, err := s.d.Store.FindTeamServers(ctx, c.UserID, name)
	return TeamDetail{Team: t, Servers: nonNil(deps)}, err
}

// MemberIn names a user.
type MemberIn struct {
	User string `json:"user" jsonschema:"a user id"`
}

// AddMember adds a user to a team the caller is a member of, as a member.
// Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) AddMember(ctx context.Context, c duet.Caller, team string, in MemberIn) (TeamDetail, error) {
	return govern(ctx, s, c, "addTeamMember", in, func(ctx context.Context) (TeamDetail, error) {
		user := strings.TrimSpace(in.User)
		if err := duet.ValidUserID(user); err != nil {
			return TeamDetail{}, err
		}
		if err := s.d.Store.AddTeamMember(ctx, c.UserID, team, user); err != nil {
			return TeamDetail{}, err
		}
		return s.teamDetail(ctx, c, team)
	})
}

// RemoveMember removes a user from a team: the caller leaving, or, as a
// maintainer, removing a member, as an owner anyone. Returns NOT_FOUND,
// PERMISSION_DENIED, CONFLICT (the last owner).
func (s *Service) RemoveMember(ctx context.Context, c duet.Caller, team, user string) (Empty, error) {
	return govern(ctx, s, c, "removeTeamMember", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.Store.RemoveTeamMember(ctx, c.UserID, team, user)
	})
}

// RoleIn is a member's new role.
type RoleIn struct {
	Role duet.TeamRole `json:"role" jsonschema:"owner, maintainer or member"`
}

// SetRole gives a member of a team a role; the caller must be an owner.
// Returns NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED, CONFLICT (the
// last owner).
func (s *Service) SetRole(ctx context.Context, c duet.Caller, team, user string, in RoleIn) (TeamDetail, error) {
	return govern(ctx, s, c, "setTeamRole", in, func(ctx context.Context) (TeamDetail, error) {
		if err := s.d.Store.SetTeamRole(ctx, c.UserID, team, user, duet.TeamRole(strings.TrimSpace(string(in.Role)))); err != nil {
			return TeamDetail{}, err
		}
		return s.teamDetail(ctx, c, team)
	})
}

// DeleteTeam deletes a team, its dependency list and every share with it;
// the caller must be an owner, and the team must own no task. Returns
// NOT_FOUND, PERMISSION_DENIED, CONFLICT.
func (s *Service) DeleteTeam(ctx context.Context, c duet.Caller, team string) (Empty, error) {
	return govern(ctx, s, c, "deleteTeam", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.Store.DeleteTeam(ctx, c.UserID, team)
	})
}

// TeamServerIn lists one of the caller's servers on a team's dependency
// list: its address and archived tools, never the caller's credentials.
type TeamServerIn struct {
	From        string `json:"from" jsonschema:"your registered server (name or serverKey)"`
	Description string `json:"description,omitempty" jsonschema:"what the team uses it for"`
}

// AddTeamServer adds one of the caller's registered servers to a team's
// dependency list; the caller must be a maintainer or owner. Returns
// NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED.
func (s *Service) AddTeamServer(ctx context.Context, c duet.Caller, team string, in TeamServerIn) (*duet.TeamServer, error) {
	return govern(ctx, s, c, "addTeamServer", in, func(ctx context.Context) (*duet.TeamServer, error) {
		reg, tools, err := s.d.MCP.Server(ctx, c.UserID, in.From)
		if err != nil {
			return nil, err
		}
		ts := &duet.TeamServer{Team: team, Name: reg.Name, URL: reg.URL, Description: strings.TrimSpace(in.Description), AddedBy: c.UserID,
			Tools: append([]*duet.MCPToolAsset{}, tools...)}
		if err := s.d.Store.SaveTeamServer(ctx, ts); err != nil {
			return nil, err
		}
		return ts, nil
	})
}

// RemoveTeamServer removes an entry of a team's dependency list; the caller
// must be a maintainer or owner. Returns NOT_FOUND, PERMISSION_DENIED.
func (s *Service) RemoveTeamServer(ctx context.Context, c duet.Caller, team, name string) (Empty, error) {
	return govern(ctx, s, c, "removeTeamServer", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.Store.DeleteTeamServer(ctx, c.UserID, team, name)
	})
}

// TeamRegisterIn registers a server of a team's list with the caller's
// credentials, pinned to the address the caller expects.
type TeamRegisterIn struct {
	URL string `json:"url" jsonschema:"the address your credentials may go to, as the team's list shows it (any spelling with the entry's serverKey); refused with CONFLICT when the entry names another server"`
	Credentials
}

// RegisterTeamServer registers a server of a team's dependency list for
// the caller, under the same name, with the caller's own credentials (sent
// once, never shared with the team), and archives its tools. The
// registration is pinned: in.URL must have the entry's serverKey, so a
// list changed since the caller read it cannot send their credentials
// elsewhere. Returns NOT_FOUND, INVALID_ARGUMENT, CONFLICT and the codes
// of RegisterServer.
func (s *Service) RegisterTeamServer(ctx context.Context, c duet.Caller, team, name string, in TeamRegisterIn) (ServerDetail, error) {
	size := len(in.URL) + len(in.BearerToken)
	for k, v := range in.Headers {
		size += len(k) + len(v)
	}
	return governSized(ctx, s, c, "registerTeamServer", size, func(ctx context.Context) (ServerDetail, error) {
		deps, err := s.d.Store.FindTeamServers(ctx, c.UserID, team)
		if err != nil {
			return ServerDetail{}, err
		}
		i := slices.IndexFunc(deps, func(d *duet.TeamServer) bool { return d.Name == name || d.ServerKey == name })
		if i < 0 {
			return ServerDetail{}, duet.Errorf(duet.CodeNotFound, "team %s lists no server %q", team, name)
		}
		d := deps[i]
		if strings.TrimSpace(in.URL) == "" {
			return ServerDetail{}, duet.Errorf(duet.CodeInvalidArgument, "url: give the address your credentials may go to; team %s lists %s at %s", team, d.Name, d.URL)
		}
		key, err := serverkey.Key(strings.TrimSpace(in.URL))
		if err != nil {
			return ServerDetail{}, err
		}
		if err := d.CheckPin(key); err != nil {
			return ServerDetail{}, err
		}
		h, err := in.headers()
		if err != nil {
			return ServerDetail{}, err
		}
		defer clear(h)
		reg, err := s.d.MCP.Register(ctx, mcpclient.Registration{Owner: c.UserID, Name: d.Name, URL: d.URL, Headers: h, ServerKey: d.ServerKey})
		if err != nil {
			return ServerDetail{}, err
		}
		if _, err := s.d.MCP.Sync(ctx, c.UserID, reg.Name); err != nil {
			return ServerDetail{}, err
		}
		return s.serverDetail(ctx, c, reg.Name)
	})
}
