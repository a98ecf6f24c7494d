package duet

import (
	"context"
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
	CreatedAt time.Time        `json:"createdAt"`
	UpdatedAt time.Time        `json:"updatedAt"`
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

// TaskStore keeps tasks and their sharing lists.
type TaskStore interface {
	// FindTaskByID returns the task with id if viewer may see it (viewer ""
	// means any task: for internal callers such as workers, never for a
	// caller's request).
	// Returns NOT_FOUND when it does not exist or the viewer may not see it:
	// the two cases are indistinguishable.
	FindTaskByID(ctx context.Context, viewer, id string) (*Task, error)

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
