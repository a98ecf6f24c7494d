package duet

import (
	"context"
	"time"
)

// CaseStatus is the lifecycle state of a case.
type CaseStatus string

// Case statuses.
const (
	CaseActive   CaseStatus = "active"   // applied from a suite; runs by default
	CaseDraft    CaseStatus = "draft"    // generated, not yet accepted; runs only when named
	CaseArchived CaseStatus = "archived" // removed from its suite; kept for past runs
)

// Case is one test case of a task: its declarative source (YAML, written by a
// person or by the agent) and the steps the compiler produced from it.
// Version increases each time the source changes; CreatedBy is who wrote the
// current version, which decides whether a run of it by someone else needs
// their approval (CaseApproval).
type Case struct {
	ID         string `json:"id"`
	TaskID     string `json:"taskId"`
	Key        string `json:"key"` // stable name within the task
	Title      string `json:"title"`
	Source     string `json:"source"` // declarative YAML of this case
	SourceHash string `json:"sourceHash"`
	Steps      []Step `json:"steps"`
	TimeoutMs  int64  `json:"timeoutMs,omitempty"` // whole-case limit; 0 = the engine's default
	// Retries is how many times a failed run of the case is retried from
	// its start (its own retries:, else its task's); Tags are its tags
	// (its own and its task's), which select cases for a run.
	Retries int      `json:"retries,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	// Row is the data row of a case made from one row of a data-driven
	// case (each:): its steps read it as the variable row.
	Row       map[string]any `json:"row,omitempty"`
	Version   int            `json:"version"`
	Status    CaseStatus     `json:"status"`
	CreatedBy string         `json:"createdBy"` // who wrote this version (the task's owner, or a draft's generator)
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// CaseFilter selects the cases of one task.
type CaseFilter struct {
	TaskID          string
	IncludeDrafts   bool
	IncludeArchived bool
	Cursor          string
	Limit           int // 0 means 50; at most 200
}

// Suite is the desired state of one task and its cases, as declared in a
// suite file. Applying it creates or updates the task and its cases.
type Suite struct {
	Task  Task
	Cases []*Case
	// Schedules are the task's schedule: entries, owned by whoever applies
	// the suite (Source ScheduleFromSuite, matched by Name; NextFireAt is
	// used for a new or changed one). Those no longer listed are removed.
	Schedules []*Schedule `json:"Schedules,omitempty"`
	// Source, when set, is the YAML the suite was compiled from: ApplySuite
	// keeps it as the task's SuiteSource (Source.TaskID, AppliedBy and
	// UpdatedAt are the apply's) in the same transaction. Nil keeps the
	// task's source as it was.
	Source *SuiteSource `json:"-"`
	// Via is how the versions of cases this apply writes were saved
	// (CaseVersion.Via): "" is SavedByApply.
	Via CaseSaveVia `json:"-"`
}

// ApplyAction says what applying a suite did to one object.
type ApplyAction string

// Apply actions.
const (
	ApplyCreated   ApplyAction = "created"
	ApplyUpdated   ApplyAction = "updated"
	ApplyUnchanged ApplyAction = "unchanged"
	ApplyArchived  ApplyAction = "archived"
)

// ApplyResult reports what ApplySuite did.
type ApplyResult struct {
	Task       *Task             `json:"task"`
	TaskAction ApplyAction       `json:"taskAction"`
	Cases      []ApplyCaseResult `json:"cases"`
}

// ApplyCaseResult is what happened to one case.
type ApplyCaseResult struct {
	Key     string      `json:"key"`
	ID      string      `json:"id"`
	Version int         `json:"version"`
	Action  ApplyAction `json:"action"`
}

// Changed reports whether applying changed anything.
func (r *ApplyResult) Changed() bool {
	if r.TaskAction != ApplyUnchanged {
		return true
	}
	for _, c := range r.Cases {
		if c.Action != ApplyUnchanged {
			return true
		}
	}
	return false
}

// CaseStore keeps cases.
type CaseStore interface {
	// ApplySuite creates or updates, in one transaction, the task named
	// s.Task.Name owned by owner and its cases (matched by Key). Cases of the
	// task that are no longer in the suite are archived (drafts are kept).
	// Unchanged objects are left untouched. Returns INVALID_ARGUMENT.
	ApplySuite(ctx context.Context, owner string, s *Suite) (*ApplyResult, error)

	// SaveDraftCase stores a generated case as a draft of the task, written
	// by c.CreatedBy (the task's owner or a user it is shared with): a new
	// version when a draft of the same author has that key. A draft is a
	// proposal: it runs only when named, and only the task's owner makes
	// it a case of the suite (ApplySuite with its key). Returns NOT_FOUND,
	// CONFLICT (an active or archived case, or another author's draft,
	// has the key).
	SaveDraftCase(ctx context.Context, c *Case) error

	// FindCaseByID returns the case with id if viewer may see its task.
	// Returns NOT_FOUND.
	FindCaseByID(ctx context.Context, viewer, id string) (*Case, error)

	// CountCases returns how many active cases a task has.
	CountCases(ctx context.Context, taskID string) (int, error)

	// FindCases returns a page of the cases of a task, in key order, with the
	// next cursor and the total. The caller checks access to the task first.
	FindCases(ctx context.Context, filter CaseFilter) (cases []*Case, next string, total int, err error)

	// FindTaskCases returns the task filter.TaskID as FindTaskByID(viewer)
	// does and one page of its cases as FindCases(filter) does, read
	// together (one statement on PostgreSQL). Returns NOT_FOUND,
	// INVALID_ARGUMENT.
	FindTaskCases(ctx context.Context, viewer string, filter CaseFilter) (task *Task, cases []*Case, next string, total int, err error)
}
