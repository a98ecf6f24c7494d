package duet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Task is a business under test: a named web product with a base URL that
// test cases run against. Its owner may share it with other users; a user sees
// only the tasks it owns or that were shared with it.
type Task struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	BaseURL     string   `json:"baseUrl"`
	Device      string   `json:"device,omitempty"` // default device preset for browser steps
	Trace       string   `json:"trace,omitempty"`  // when its cases keep a trace: off, on-failure, on-first-retry, on ("": DUET_TRACE)
	Owner       string   `json:"owner"`
	SharedWith  []string `json:"sharedWith"`
	// PostRun are the MCP tool calls made when a run of the task ends;
	// PostRunBy is who wrote them (who applied the suite that last changed
	// them): a run by anyone else needs the executor's approval of any call
	// made with the executor's credentials.
	PostRun   []*PostRunAction `json:"postRun,omitempty"`
	PostRunBy string           `json:"postRunBy,omitempty"`
	// Environments are the places the task can run against, by name: each
	// replaces the base URL and gives the variables env.NAME. A run names
	// one (Run.Environment), or runs in DefaultEnvironment.
	Environments       map[string]*Environment `json:"environments,omitempty"`
	DefaultEnvironment string                  `json:"defaultEnvironment,omitempty"`
	// BeforeAll and AfterAll are the steps run once per run, before its
	// first case and after its last (AfterAll whatever became of the
	// cases: failed or cancelled too). HooksBy is who wrote them (who
	// applied the suite that last changed them): as with PostRun, a run by
	// anyone else needs the executor's approval of a call made with the
	// executor's credentials.
	BeforeAll []Step `json:"beforeAll,omitempty"`
	AfterAll  []Step `json:"afterAll,omitempty"`
	HooksBy   string `json:"hooksBy,omitempty"`
	// BeforeEach and AfterEach are the steps each case of the task runs
	// before and after its own: compiled into each case (Step.Hook), and
	// kept here for a case compiled on its own (a generated draft).
	// HookSaves are the variables the beforeAll and beforeEach steps save,
	// which a case's steps may read.
	BeforeEach []Step   `json:"beforeEach,omitempty"`
	AfterEach  []Step   `json:"afterEach,omitempty"`
	HookSaves  []string `json:"hookSaves,omitempty"`
	// Retries, CaseTimeoutMs and Tags are what the task's cases take when
	// they do not say (retries:, timeout:, and tags added to their own);
	// Parallel is how many of its cases a run executes at once (0: the
	// deployment's DUET_PARALLEL), within DUET_MAX_PARALLEL.
	Retries       int       `json:"retries,omitempty"`
	CaseTimeoutMs int64     `json:"caseTimeoutMs,omitempty"`
	Tags          []string  `json:"tags,omitempty"`
	Parallel      int       `json:"parallel,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// Environment is one place a task runs against (its staging, its
// production): the base URL relative URLs resolve against, and variables
// steps read as env.NAME.
type Environment struct {
	BaseURL string         `json:"baseUrl,omitempty"` // "" keeps the task's
	Vars    map[string]any `json:"vars,omitempty"`
}

// Environment returns the environment a run that names env runs in ("" is
// the task's default): its name and the environment, nil when the task
// has none of that name (and "" with nil when neither names one). Returns
// INVALID_ARGUMENT naming the task's environments when env is not one.
func (t *Task) Environment(env string) (string, *Environment, error) {
	if env == "" {
		env = t.DefaultEnvironment
	}
	if env == "" {
		return "", nil, nil
	}
	if e := t.Environments[env]; e != nil {
		return env, e, nil
	}
	names := make([]string, 0, len(t.Environments))
	for n := range t.Environments {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "", nil, Errorf(CodeInvalidArgument, "task %q has no environments; environment %q does not exist (declare it under task: environments:)", t.Name, env)
	}
	return "", nil, Errorf(CodeInvalidArgument, "task %q has no environment %q (it has: %s)", t.Name, env, strings.Join(names, ", "))
}

// HooksHash identifies one version of a task's beforeAll and afterAll
// steps (source lines aside): an executor's approval of them is of that
// version. "" when the task has none.
func HooksHash(t *Task) string {
	if len(t.BeforeAll) == 0 && len(t.AfterAll) == 0 {
		return ""
	}
	unline := func(steps []Step) []Step {
		out := slices.Clone(steps)
		for i := range out {
			out[i].Line = 0
		}
		return out
	}
	b, _ := json.Marshal([]any{"hooks", unline(t.BeforeAll), unline(t.AfterAll)})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// VisibleTo reports whether user owns t or t was shared with user.
func (t *Task) VisibleTo(user string) bool {
	if user == "" {
		return false
	}
	if t.Owner == user {
		return true
	}
	for _, u := range t.SharedWith {
		if u == user {
			return true
		}
	}
	return false
}

// TaskFilter selects tasks. Viewer is required: only tasks that the viewer
// owns or that were shared with it are returned.
type TaskFilter struct {
	Viewer string
	Query  string // case-insensitive substring of name or description
	Owner  string // only tasks owned by this user
	Cursor string // opaque; from a previous page
	Limit  int    // 0 means 20; at most 100
}

// TaskOverview is a task with its active case count, its latest run
// (nil: it has none), and for a viewer its contract alerts
// (FindContractAlerts) and schedules (FindSchedules).
type TaskOverview struct {
	Task        *Task
	ActiveCases int
	LastRun     *Run
	Alerts      []*ContractAlert
	Schedules   []*Schedule
}

// TaskStore keeps tasks and their sharing lists.
type TaskStore interface {
	// FindTaskByID returns the task with id if viewer may see it (viewer ""
	// means any task: for internal callers such as workers, never for a
	// caller's request).
	// Returns NOT_FOUND when it does not exist or the viewer may not see it:
	// the two cases are indistinguishable.
	FindTaskByID(ctx context.Context, viewer, id string) (*Task, error)

	// FindTaskOverview returns what get_test_task shows of the task with
	// id, read together: the task as FindTaskByID returns it, how many
	// active cases it has (CountCases) and its latest run with its totals
	// (FindRuns with Viewer, TaskID and Limit 1), and, when viewer is not
	// "", its contract alerts (FindContractAlerts) and schedules
	// (FindSchedules with Viewer and TaskID): one round trip on
	// PostgreSQL. Returns NOT_FOUND as FindTaskByID does.
	FindTaskOverview(ctx context.Context, viewer, id string) (*TaskOverview, error)

	// FindTaskByName returns the task that owner owns with that name.
	// Returns NOT_FOUND.
	FindTaskByName(ctx context.Context, owner, name string) (*Task, error)

	// FindTasks returns one page of the tasks matching filter, the cursor of
	// the next page ("" on the last page) and the total number of matches.
	// Returns INVALID_ARGUMENT for a bad cursor.
	FindTasks(ctx context.Context, filter TaskFilter) (tasks []*Task, next string, total int, err error)

	// ShareTask shares the task with user: a user id or "team:NAME" of a
	// team that exists (the share is bound to that team, and goes with it
	// when it is deleted). Only the owner may share. Returns NOT_FOUND,
	// INVALID_ARGUMENT (also naming a team that does not exist).
	ShareTask(ctx context.Context, owner, taskID, user string) error

	// UnshareTask stops sharing the task with user. Returns NOT_FOUND.
	UnshareTask(ctx context.Context, owner, taskID, user string) error
}
