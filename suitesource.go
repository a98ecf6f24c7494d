package duet

import (
	"context"
	"time"
)

// SuiteSource is the YAML a task was last applied from, kept with the
// apply that compiled it (Suite.Source): the suite editor opens it, since
// the task as stored is compiled (post-run actions, hooks, environments
// and schedules could not be written back as they were written).
type SuiteSource struct {
	TaskID    string    `json:"taskId"`
	Name      string    `json:"name"`   // the file name the compiler's messages named
	Source    string    `json:"source"` // the YAML, as applied
	AppliedBy string    `json:"appliedBy"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Replaces, when set, keeps this source only if the task's kept source
	// is still the one updated at that time: a source made from one read
	// before the save (a recorded case merged into it) never overwrites an
	// apply that landed in between; the kept source then stays as it is.
	Replaces *time.Time `json:"-"`
}

// MaxSuiteSourceBytes bounds a kept suite source.
const MaxSuiteSourceBytes = 1 << 20

// SuiteSourceStore keeps each task's suite source.
type SuiteSourceStore interface {
	// FindSuiteSource returns the source task taskID was last applied
	// from. It checks no access: the caller decides who may read it.
	// Returns NOT_FOUND when the task has none (it was never applied
	// from YAML, or only before sources were kept).
	FindSuiteSource(ctx context.Context, taskID string) (*SuiteSource, error)
}
