package api

import (
	"context"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
)

// TeamList is the teams the caller is a member of.
type TeamList struct {
	Teams []*duet.Team `json:"teams"`
}

// ListTeams lists the caller's teams.
func (s *Service) ListTeams(ctx context.Context, c duet.Caller) (TeamList, error) {
	return govern(ctx, s, c, "listTeams", nil, func(ctx context.Context) (TeamList, error) {
		t, err := s.d.Store.FindTeams(ctx, c.UserID)
		if t == nil {
			t = []*duet.Team{}
		}
		return TeamList{Teams: t}, err
	})
}

// TeamIn names a team.
type TeamIn struct {
	Name string `json:"name" jsonschema:"lower-case letters, digits, '.', '_' and '-'"`
}

// CreateTeam creates a team with the caller as its first member. Returns
// INVALID_ARGUMENT, CONFLICT.
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
	if deps == nil {
		deps = []*duet.TeamServer{}
	}
	return TeamDetail{Team: t, Servers: deps}, err
}

// MemberIn names a user.
type MemberIn struct {
	User string `json:"user" jsonschema:"a user id"`
}

// AddMember adds a user to a team the caller is a member of. Returns
// NOT_FOUND, INVALID_ARGUMENT.
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

// RemoveMember removes a user from a team. Returns NOT_FOUND, CONFLICT
// (the last member).
func (s *Service) RemoveMember(ctx context.Context, c duet.Caller, team, user string) (Empty, error) {
	return govern(ctx, s, c, "removeTeamMember", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.Store.RemoveTeamMember(ctx, c.UserID, team, user)
	})
}

// TeamServerIn lists one of the caller's servers on a team's dependency
// list: its address and archived tools, never the caller's credentials.
type TeamServerIn struct {
	From        string `json:"from" jsonschema:"your registered server (name or serverKey)"`
	Description string `json:"description,omitempty" jsonschema:"what the team uses it for"`
}

// AddTeamServer adds one of the caller's registered servers to a team's
// dependency list. Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) AddTeamServer(ctx context.Context, c duet.Caller, team string, in TeamServerIn) (*duet.TeamServer, error) {
	return govern(ctx, s, c, "addTeamServer", in, func(ctx context.Context) (*duet.TeamServer, error) {
		reg, tools, err := s.d.MCP.Server(ctx, c.UserID, in.From)
		if err != nil {
			return nil, err
		}
		ts := &duet.TeamServer{Team: team, Name: reg.Name, URL: reg.URL, Description: strings.TrimSpace(in.Description), AddedBy: c.UserID, Tools: []*duet.MCPToolAsset{}}
		for _, t := range tools {
			ts.Tools = append(ts.Tools, &duet.MCPToolAsset{Name: t.Name, Title: t.Title, Description: t.Description,
				InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
		}
		if err := s.d.Store.SaveTeamServer(ctx, ts); err != nil {
			return nil, err
		}
		return ts, nil
	})
}

// RemoveTeamServer removes an entry of a team's dependency list. Returns
// NOT_FOUND.
func (s *Service) RemoveTeamServer(ctx context.Context, c duet.Caller, team, name string) (Empty, error) {
	return govern(ctx, s, c, "removeTeamServer", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.Store.DeleteTeamServer(ctx, c.UserID, team, name)
	})
}

// RegisterTeamServer registers a server of a team's dependency list for
// the caller, under the same name, with the caller's own credentials (sent
// once, never shared with the team), and archives its tools. Returns
// NOT_FOUND and the codes of RegisterServer.
func (s *Service) RegisterTeamServer(ctx context.Context, c duet.Caller, team, name string, in Credentials) (ServerDetail, error) {
	size := len(in.BearerToken)
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
		h, err := in.headers()
		if err != nil {
			return ServerDetail{}, err
		}
		defer clear(h)
		reg, err := s.d.MCP.Register(ctx, mcpclient.Registration{Owner: c.UserID, Name: deps[i].Name, URL: deps[i].URL, Headers: h})
		if err != nil {
			return ServerDetail{}, err
		}
		if _, err := s.d.MCP.Sync(ctx, c.UserID, reg.Name); err != nil {
			return ServerDetail{}, err
		}
		return s.serverDetail(ctx, c, reg.Name)
	})
}
