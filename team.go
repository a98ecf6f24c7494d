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

// NamePattern is the syntax of a team's and an asset's name, whole. It is
// written so that it means the same to Go's regexp and to a browser, which
// compiles a form's pattern attribute with the v flag (a "-" in a class
// escaped), so the console's forms check names with it as the server does.
const NamePattern = `[a-z0-9][a-z0-9._\-]{0,63}`

var teamNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:` + NamePattern + `)$`) })

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

// TeamRole is what a member may do in a team.
type TeamRole string

// Team roles, from the most to the least a member may do. Every member
// sees what is shared with the team, adds members (as members) and may
// leave; a maintainer also removes members and changes the team's MCP
// dependency list; an owner also changes roles, removes maintainers and
// owners, and deletes the team. A team always has an owner: its creator
// first, and the last owner can neither leave nor be demoted or removed.
const (
	RoleOwner      TeamRole = "owner"
	RoleMaintainer TeamRole = "maintainer"
	RoleMember     TeamRole = "member"
)

// ValidTeamRole reports whether r is a team role.
func ValidTeamRole(r TeamRole) bool {
	return r == RoleOwner || r == RoleMaintainer || r == RoleMember
}

// Rank orders roles: owner 3, maintainer 2, member 1, anything else 0.
func (r TeamRole) Rank() int {
	switch r {
	case RoleOwner:
		return 3
	case RoleMaintainer:
		return 2
	case RoleMember:
		return 1
	}
	return 0
}

// Team is a named group of users. Tasks and assets are shared with a team,
// and a task may be owned by one; credentials are never shared: each member
// registers the team's MCP servers with their own.
//
// ID is the team's identity: a share with "team:NAME" (and a release of
// the stop tool to it) is bound to the team that had the name when it was
// made, so a team deleted and re-created under the same name by someone
// else inherits nothing.
type Team struct {
	ID        string              `json:"id"`
	Name      string              `json:"name"`
	CreatedBy string              `json:"createdBy"`
	Members   []string            `json:"members"` // sorted
	Roles     map[string]TeamRole `json:"roles"`   // each member's role
	CreatedAt time.Time           `json:"createdAt"`
}

// Role returns user's role in t ("" when user is not a member).
func (t *Team) Role(user string) TeamRole { return t.Roles[user] }

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
// hands tasks over. A team one is not a member of looks like one that does
// not exist (NOT_FOUND); a member without the role an action needs gets
// PERMISSION_DENIED naming the role.
type TeamStore interface {
	// CreateTeam creates team name with creator as its first member and
	// owner. Returns INVALID_ARGUMENT, CONFLICT (the name is taken).
	CreateTeam(ctx context.Context, creator, name string) (*Team, error)
	// FindTeam returns a team viewer is a member of. Returns NOT_FOUND
	// (also when viewer is not a member).
	FindTeam(ctx context.Context, viewer, name string) (*Team, error)
	// FindTeams returns the teams user is a member of, by name.
	FindTeams(ctx context.Context, user string) ([]*Team, error)
	// TeamIDs returns the ids of the teams of those names that exist (a
	// name of none is left out): what a configuration naming teams binds
	// to when Duet starts.
	TeamIDs(ctx context.Context, names []string) (map[string]string, error)
	// AddTeamMember adds user to team as a member; by must be a member.
	// Returns NOT_FOUND, INVALID_ARGUMENT.
	AddTeamMember(ctx context.Context, by, team, user string) error
	// RemoveTeamMember removes user from team. A member may leave; by
	// must be a maintainer or owner to remove a member, an owner to
	// remove a maintainer or an owner. The last owner cannot leave or be
	// removed. Returns NOT_FOUND, PERMISSION_DENIED, CONFLICT.
	RemoveTeamMember(ctx context.Context, by, team, user string) error
	// SetTeamRole gives user (a member) role; by must be an owner. The
	// last owner cannot be demoted. Returns NOT_FOUND, INVALID_ARGUMENT,
	// PERMISSION_DENIED, CONFLICT.
	SetTeamRole(ctx context.Context, by, team, user string, role TeamRole) error
	// DeleteTeam deletes team with its members, its dependency list and
	// every share with it (tasks and assets shared with "team:NAME" are no
	// longer shared with anyone through it); by must be an owner, and the
	// team must own no task (CONFLICT: hand them over first). Returns
	// NOT_FOUND, PERMISSION_DENIED, CONFLICT.
	DeleteTeam(ctx context.Context, by, team string) error

	// SaveTeamServer adds (or replaces, by name) an entry of the team's
	// dependency list; s.AddedBy must be a maintainer or owner of the
	// team. Returns NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED.
	SaveTeamServer(ctx context.Context, s *TeamServer) error
	// FindTeamServers returns team's dependency list, by name, as viewer
	// (a member) sees it. Returns NOT_FOUND.
	FindTeamServers(ctx context.Context, viewer, team string) ([]*TeamServer, error)
	// DeleteTeamServer removes an entry; by must be a maintainer or
	// owner. Returns NOT_FOUND, PERMISSION_DENIED.
	DeleteTeamServer(ctx context.Context, by, team, name string) error

	// TransferTask makes to (a user or "team:NAME", an existing team) the owner of the task
	// by owns (directly, or as a member of the owning team) and records the
	// transfer. The task's shares stay as they are. Returns NOT_FOUND,
	// INVALID_ARGUMENT (to is the owner already, or an unknown team).
	TransferTask(ctx context.Context, by, taskID, to string) (*TaskTransfer, error)
	// FindTaskTransfers returns the transfers of a task viewer may see,
	// oldest first. Returns NOT_FOUND.
	FindTaskTransfers(ctx context.Context, viewer, taskID string) ([]*TaskTransfer, error)
}

// CheckPin is the one rule of registering a server from a team's list: the
// address the person gave (whose serverKey is givenKey) must be the
// entry's server, so that a list changed since they read it cannot send
// their credentials elsewhere. Returns CONFLICT naming both addresses.
func (s *TeamServer) CheckPin(givenKey string) error {
	if givenKey == s.ServerKey {
		return nil
	}
	return Errorf(CodeConflict, "team %s lists %s at %s (serverKey %s), not at the address you gave (serverKey %s): nothing was registered and no credential was sent; check the list (duet team show %s) and give the address it shows",
		s.Team, s.Name, s.URL, s.ServerKey, givenKey, s.Team)
}

// MarshalTools encodes a dependency's tools for storage.
func (s *TeamServer) MarshalTools() ([]byte, error) {
	if s.Tools == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.Tools)
}

// article is "a" or "an" before a role's name.
func (r TeamRole) article() string {
	if r == RoleOwner {
		return "an"
	}
	return "a"
}

// CheckTeamRole is the one rule of what a role allows: user, whose role in
// team is has, may do what (e.g. "changing the MCP dependency list") only
// with need or a higher role. Returns PERMISSION_DENIED naming the role
// needed.
func CheckTeamRole(team, user string, has, need TeamRole, what string) error {
	if has.Rank() >= need.Rank() {
		return nil
	}
	who := need.article() + " " + string(need)
	if need != RoleOwner {
		who += " or an owner"
	}
	return Errorf(CodePermissionDenied, "%s of team %s needs %s; %s is %s %s (an owner changes roles: duet team role %s USER ROLE)",
		what, team, who, user, has.article(), has, team)
}

// CheckTeamRemoval says whether by (role byRole) may remove user (role
// role) from team: anyone may leave; removing a member needs a maintainer,
// removing a maintainer or an owner needs an owner. (That the last owner
// stays is the store's check, in the same transaction.) Returns
// PERMISSION_DENIED.
func CheckTeamRemoval(team, by string, byRole TeamRole, user string, role TeamRole) error {
	if by == user {
		return nil
	}
	need := RoleMaintainer
	if role.Rank() >= RoleMaintainer.Rank() {
		need = RoleOwner
	}
	return CheckTeamRole(team, by, byRole, need, "removing "+role.article()+" "+string(role))
}

// LastOwner is the CONFLICT of a change that would leave team without an
// owner.
func LastOwner(team, user, what string) error {
	return Errorf(CodeConflict, "%s is the last owner of team %s and cannot %s: a team always has an owner; make another member an owner first (duet team role %s USER owner), or delete the team",
		user, team, what, team)
}

// NoSuchTeam is the INVALID_ARGUMENT of a share, transfer or release that
// names a team that does not exist: such a reference would go to whoever
// creates the team first.
func NoSuchTeam(name string) error {
	return Errorf(CodeInvalidArgument, "there is no team %q: share with (or hand to) a team that exists; create it first (duet team create %s)", name, name)
}
