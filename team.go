package duet

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"time"
)

// TeamPrefix marks a team where a user id is expected: a task shared with
// "team:qa", an asset shared with "team:qa", a task owned by "team:qa" is
// shared with, or owned by, every member of team qa at the time of each
// read — membership changes take effect at once.
const TeamPrefix = "team:"

var teamNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })

// ValidTeamName reports whether name may name a team: lower-case letters,
// digits, '.', '_' and '-', starting with a letter or digit, at most 64.
func ValidTeamName(name string) bool { return teamNameRe().MatchString(name) }

// TeamPrincipal returns "team:NAME", the principal that shares with or
// owns for team name.
func TeamPrincipal(name string) string { return TeamPrefix + name }

// TeamOf returns the team a principal names and whether it names one.
func TeamOf(principal string) (string, bool) {
	return strings.CutPrefix(principal, TeamPrefix)
}

// Team is a named group of users. Tasks and assets are shared with a team,
// and a task may be owned by one; credentials are never shared: each member
// registers the team's MCP servers with their own.
type Team struct {
	Name      string    `json:"name"`
	CreatedBy string    `json:"createdBy"`
	Members   []string  `json:"members"` // sorted
	CreatedAt time.Time `json:"createdAt"`
}

// TeamServer is one entry of a team's MCP dependency list: a server its
// members should register, as an asset — the address, serverKey,
// description and archived tools, never a credential.
type TeamServer struct {
	Team        string          `json:"team"`
	Name        string          `json:"name"` // the name members register it under
	URL         string          `json:"url"`  // normalized; refused when it carries a credential
	ServerKey   string          `json:"serverKey"`
	Description string          `json:"description,omitempty"`
	Tools       []*MCPToolAsset `json:"tools"`
	AddedBy     string          `json:"addedBy"`
	AddedAt     time.Time       `json:"addedAt"`
}

// TaskTransfer is the record of a task handed to another owner.
type TaskTransfer struct {
	TaskID string    `json:"taskId"`
	From   string    `json:"from"`
	To     string    `json:"to"` // a user or "team:NAME"
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// TeamStore keeps teams, their members and their MCP dependency lists, and
// hands tasks over.
type TeamStore interface {
	// CreateTeam creates team name with creator as its first member.
	// Returns INVALID_ARGUMENT, CONFLICT (the name is taken).
	CreateTeam(ctx context.Context, creator, name string) (*Team, error)
	// FindTeam returns a team viewer is a member of. Returns NOT_FOUND
	// (also when viewer is not a member).
	FindTeam(ctx context.Context, viewer, name string) (*Team, error)
	// FindTeams returns the teams user is a member of, by name.
	FindTeams(ctx context.Context, user string) ([]*Team, error)
	// AddTeamMember adds user to team; by must be a member. Returns
	// NOT_FOUND, INVALID_ARGUMENT.
	AddTeamMember(ctx context.Context, by, team, user string) error
	// RemoveTeamMember removes user from team; by must be a member. The
	// last member cannot leave. Returns NOT_FOUND, CONFLICT.
	RemoveTeamMember(ctx context.Context, by, team, user string) error

	// SaveTeamServer adds (or replaces, by name) an entry of the team's
	// dependency list; s.AddedBy must be a member, and an entry is
	// replaced only by the member who listed it (or by anyone once that
	// member left the team). Returns NOT_FOUND, INVALID_ARGUMENT, CONFLICT.
	SaveTeamServer(ctx context.Context, s *TeamServer) error
	// FindTeamServers returns team's dependency list, by name, as viewer
	// (a member) sees it. Returns NOT_FOUND.
	FindTeamServers(ctx context.Context, viewer, team string) ([]*TeamServer, error)
	// DeleteTeamServer removes an entry, under the same rule as
	// replacing it. Returns NOT_FOUND, CONFLICT.
	DeleteTeamServer(ctx context.Context, by, team, name string) error

	// TransferTask makes to (a user or "team:NAME") the owner of the task
	// by owns (directly, or as a member of the owning team) and records the
	// transfer. The task's shares stay as they are. Returns NOT_FOUND,
	// INVALID_ARGUMENT (to is the owner already, or an unknown team).
	TransferTask(ctx context.Context, by, taskID, to string) (*TaskTransfer, error)
	// FindTaskTransfers returns the transfers of a task viewer may see,
	// oldest first. Returns NOT_FOUND.
	FindTaskTransfers(ctx context.Context, viewer, taskID string) ([]*TaskTransfer, error)
}

// MarshalTools encodes a dependency's tools for storage.
func (s *TeamServer) MarshalTools() ([]byte, error) {
	if s.Tools == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.Tools)
}
