package duet

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// AssetKind names a kind of AI asset. Values are wire values: add, never
// rename.
type AssetKind string

// Asset kinds. Skills, rules and prompts are written by people and kept in
// the AssetStore; MCP servers and tools are the registered servers' archived
// catalogs shown beside them (read-only here: `duet server` manages them).
const (
	AssetSkill     AssetKind = "skill"      // how to test something: instructions the agent follows when asked
	AssetRule      AssetKind = "rule"       // a constraint every generated case must respect
	AssetPrompt    AssetKind = "prompt"     // a reusable instruction that starts a generation
	AssetFlow      AssetKind = "flow"       // reusable steps with parameters, which cases of any task run with use:
	AssetMCPServer AssetKind = "mcp-server" // a registered MCP server (never its credentials)
	AssetMCPTool   AssetKind = "mcp-tool"   // a tool of a registered MCP server: name, description, schemas
)

// AssetKinds lists the kinds a person writes (skill, rule, prompt).
func AssetKinds() []AssetKind { return []AssetKind{AssetSkill, AssetRule, AssetPrompt, AssetFlow} }

// Valid reports whether k is a kind a person writes.
func (k AssetKind) Valid() bool { return slices.Contains(AssetKinds(), k) }

// Visibility says who may read an asset.
type Visibility string

// Visibilities.
const (
	VisibilityPrivate Visibility = "private" // the owner only
	VisibilityShared  Visibility = "shared"  // the owner and the users in SharedWith
)

// Everyone in an asset's SharedWith shares it with every user.
const Everyone = "*"

// Limits of an asset.
const (
	MaxAssetBodyBytes   = 64 << 10
	MaxAssetDescription = 500
)

var assetNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:` + NamePattern + `)$`) })

// ValidAssetName reports whether name may name an asset: lower-case letters,
// digits, '.', '_' and '-', starting with a letter or digit, at most 64.
func ValidAssetName(name string) bool { return assetNameRe().MatchString(name) }

// Asset is a named, versioned AI asset: a skill, a rule or a prompt. Its
// owner may share it with other users. Each change of its description or
// body makes a new version; older versions are kept.
type Asset struct {
	ID          string     `json:"id"`
	Kind        AssetKind  `json:"kind"`
	Name        string     `json:"name"`
	Owner       string     `json:"owner"`
	Version     int        `json:"version"`
	Description string     `json:"description"`
	Body        string     `json:"body"`
	Visibility  Visibility `json:"visibility"`
	SharedWith  []string   `json:"sharedWith"` // users (or Everyone); empty when private
	CreatedAt   time.Time  `json:"createdAt"`  // of the asset (version 1)
	UpdatedAt   time.Time  `json:"updatedAt"`  // of this version
}

// Ref returns "owner/name", the reference that finds a in any viewer's
// assets.
func (a *Asset) Ref() string { return a.Owner + "/" + a.Name }

// VisibleTo reports whether user owns a or a was shared with user.
func (a *Asset) VisibleTo(user string) bool {
	if user == "" {
		return false
	}
	return a.Owner == user || slices.Contains(a.SharedWith, user) || slices.Contains(a.SharedWith, Everyone)
}

// Validate checks what a person wrote: kind, name, description and body.
// Returns INVALID_ARGUMENT.
func (a *Asset) Validate() error {
	switch {
	case !a.Kind.Valid():
		return Errorf(CodeInvalidArgument, "asset kind %q: want skill, rule or prompt", a.Kind)
	case !ValidAssetName(a.Name):
		return Errorf(CodeInvalidArgument, "asset name %q: use lower-case letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)", a.Name)
	case strings.TrimSpace(a.Body) == "":
		return Errorf(CodeInvalidArgument, "the %s %q is empty", a.Kind, a.Name)
	case len(a.Body) > MaxAssetBodyBytes:
		return Errorf(CodeTooLarge, "the %s %q is %d bytes; the limit is %d", a.Kind, a.Name, len(a.Body), MaxAssetBodyBytes)
	case len(a.Description) > MaxAssetDescription || strings.ContainsAny(a.Description, "\n\r"):
		return Errorf(CodeInvalidArgument, "the description must be one line of at most %d bytes", MaxAssetDescription)
	}
	for _, u := range a.SharedWith {
		if u == Everyone {
			continue
		}
		if err := ValidPrincipal(strings.TrimSpace(u)); err != nil {
			return Errorf(CodeInvalidArgument, "share with: %s (or %q for everyone)", ErrorMessage(err), Everyone)
		}
	}
	return nil
}

// AssetFilter selects assets. Viewer is required: only assets the viewer
// owns or that were shared with it are returned, at their latest version.
type AssetFilter struct {
	Viewer string
	Kind   AssetKind // "" means every kind
	Owner  string    // only assets of this owner
	Limit  int       // 0 means 200; at most 1000
}

// AssetStore keeps skills, rules and prompts with their versions.
type AssetStore interface {
	// SaveAsset creates a.Owner's asset of a.Kind named a.Name, or makes a
	// new version of it when the description or body changed. When
	// a.SharedWith is nil an existing asset keeps its sharing; otherwise
	// the sharing is replaced (empty means private): users, Everyone, or
	// "team:NAME" of a team that exists (bound to it, as ShareTask). a is
	// filled with the stored state. Returns INVALID_ARGUMENT, TOO_LARGE.
	SaveAsset(ctx context.Context, a *Asset) (ApplyAction, error)

	// FindAsset returns the asset of kind that ref names, as viewer sees
	// it: ref is "name" (the viewer's own asset, else the one asset of that
	// name shared with the viewer) or "owner/name". version 0 means the
	// latest. Returns NOT_FOUND (also when the viewer may not see it), and
	// INVALID_ARGUMENT when "name" matches several shared assets.
	FindAsset(ctx context.Context, viewer string, kind AssetKind, ref string, version int) (*Asset, error)

	// FindAssets returns the latest versions of the assets matching
	// filter, ordered by kind, owner and name.
	FindAssets(ctx context.Context, filter AssetFilter) ([]*Asset, error)

	// DeleteAsset removes owner's asset and all its versions.
	// Returns NOT_FOUND.
	DeleteAsset(ctx context.Context, owner string, kind AssetKind, name string) error
}

// MCPServerAsset is a registered MCP server as the agent and the asset
// center see it: its name, serverKey, description and archived tools. It
// never holds a URL with credentials, a header or a token.
type MCPServerAsset struct {
	ServerKey   string          `json:"serverKey"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Tools       []*MCPToolAsset `json:"tools"`
}

// MCPToolAsset is one archived tool of a registered MCP server, as assets
// show it: the archived tool itself (it holds no credentials).
type MCPToolAsset = MCPTool

// MCPAssetLister lists the MCP servers a user registered, with their
// archived tools, as assets. The MCP client side (the registry) implements
// it; what it returns never contains credentials.
type MCPAssetLister interface {
	// MCPAssets returns user's registered servers, ordered by name.
	MCPAssets(ctx context.Context, user string) ([]*MCPServerAsset, error)
}

// Generation is the record of one run of the test agent: what it was asked,
// what it cost and how it ended. Token counts are those the LLM endpoint
// reported.
type Generation struct {
	ID               string    `json:"id"`
	TaskID           string    `json:"taskId"`
	User             string    `json:"user"`
	Model            string    `json:"model"`
	Goal             string    `json:"goal,omitempty"`
	Assets           []string  `json:"assets,omitempty"` // "kind:owner/name@version" of the assets used
	Turns            int       `json:"turns"`            // chat completions answered
	ToolCalls        int       `json:"toolCalls"`        // tool calls the model made
	Repairs          int       `json:"repairs"`          // drafts sent back with compile errors
	PromptTokens     int       `json:"promptTokens"`
	CompletionTokens int       `json:"completionTokens"`
	TotalTokens      int       `json:"totalTokens"`
	Attempts         int       `json:"attempts"` // HTTP requests to the endpoint, retries included
	Outcome          Code      `json:"outcome"`  // OutcomeOK or an error code
	ErrorMessage     string    `json:"errorMessage,omitempty"`
	DurationMs       int64     `json:"durationMs"`
	CaseID           string    `json:"caseId,omitempty"`
	CaseVersion      int       `json:"caseVersion,omitempty"`
	TraceID          string    `json:"traceId,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
}

// GenerationFilter selects generation records, newest first.
type GenerationFilter struct {
	User   string // required: a user sees only their own generations
	TaskID string
	Limit  int // 0 means 20; at most 200
}

// GenerationStore keeps the records of the test agent's generations.
type GenerationStore interface {
	// CreateGeneration stores g, setting its ID and CreatedAt when empty.
	// Returns INVALID_ARGUMENT.
	CreateGeneration(ctx context.Context, g *Generation) error
	// FindGenerations returns records matching filter, newest first.
	FindGenerations(ctx context.Context, filter GenerationFilter) ([]*Generation, error)
}
