package duet

import (
	"context"
	"time"
)

// Schedule policies: what a schedule does with a slot missed while no
// instance was running, and with a slot that comes while the previous run
// it started is still queued or running.
type (
	// MissedPolicy decides a slot that passed while no scheduler ran.
	MissedPolicy string
	// OverlapPolicy decides a slot that comes while the schedule's
	// previous run has not finished.
	OverlapPolicy string
)

// Schedule policies. The defaults are MissedSkip and OverlapSkip.
const (
	MissedSkip    MissedPolicy  = "skip"    // the missed slots are dropped; the next run is at the next slot to come
	MissedRunOnce MissedPolicy  = "runOnce" // one run for all the missed slots, at once, then the next slot to come
	OverlapSkip   OverlapPolicy = "skip"    // no run for the slot; the next slot tries again
	OverlapQueue  OverlapPolicy = "queue"   // a run for the slot all the same: it waits in the queue behind the previous one
)

// ScheduleSource says where a schedule was made.
type ScheduleSource string

// Schedule sources.
const (
	ScheduleFromSuite ScheduleSource = "suite" // declared under the task's schedule: in the suite; applying the suite keeps it
	ScheduleFromUser  ScheduleSource = "user"  // made from the console, the CLI or REST
)

// CallSource of the runs a schedule starts.
const SourceSchedule CallSource = "schedule"

// Schedule starts runs of a task at the slots of a cron expression (in a
// time zone) or of a fixed interval. A run it starts is its owner's, as if
// the owner had started it: the owner's credentials, the owner's approvals,
// the owner's queue and budgets. It fires at most once per slot however many
// instances run a scheduler (the store claims the slot and creates the run
// in one transaction: StartRunParams.Fire).
type Schedule struct {
	ID     string `json:"id"`
	TaskID string `json:"taskId"`
	// Owner is whom the runs run as; TokenID the personal access token
	// it was made with ("" for none): revoking that token pauses it.
	Owner   string         `json:"owner"`
	TokenID string         `json:"-"`
	Name    string         `json:"name"`
	Source  ScheduleSource `json:"source"`
	// Cron (five fields, or a descriptor such as @daily) read in TimeZone
	// (an IANA name; "" is UTC), or Every: exactly one of the two.
	Cron     string        `json:"cron,omitempty"`
	TimeZone string        `json:"timeZone,omitempty"`
	Every    time.Duration `json:"-"`
	Missed   MissedPolicy  `json:"missed"`
	Overlap  OverlapPolicy `json:"overlap"`
	// Paused schedules fire nothing; PausedReason says why when Duet
	// paused it (the owner lost access to the task, its token was
	// revoked), "" when a person did.
	Paused       bool   `json:"paused"`
	PausedReason string `json:"pausedReason,omitempty"`
	// NextFireAt is the next slot; LastFireAt the last slot that
	// started a run (LastRunID) and LastError why the last slot did not.
	NextFireAt time.Time  `json:"nextFireAt"`
	LastFireAt *time.Time `json:"lastFireAt,omitempty"`
	LastRunID  string     `json:"lastRunId,omitempty"`
	LastError  string     `json:"lastError,omitempty"`
	// Tags, when set, select the cases its runs run: those with any of
	// them (a suite's schedule: tags:).
	Tags      []string  `json:"tags,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// SpecHash is what identifies the timing and policies of s: two schedules
// of a suite with the same name and hash are the same schedule.
func (s *Schedule) SpecHash() string {
	return s.Cron + "\x00" + s.TimeZone + "\x00" + s.Every.String() + "\x00" + string(s.Missed) + "\x00" + string(s.Overlap)
}

// ScheduleFire is a slot a scheduler claims for a schedule, in the
// transaction that creates the slot's run (RunStore.CreateRun) or, for a
// slot that starts no run, alone (ScheduleStore.AdvanceSchedule): the claim
// holds only while the stored NextFireAt is still Slot, so that of several
// schedulers the first to commit fires the slot and the others change
// nothing.
type ScheduleFire struct {
	ScheduleID string
	Slot       time.Time // the stored NextFireAt this claim expects
	Next       time.Time // the NextFireAt after it
	RunSlot    time.Time // the slot the run stands for (LastFireAt): Slot, or the last missed one
	Tags       []string  // the schedule's tags: the run runs the cases with any of them (none: all)
}

// ScheduleFilter selects schedules.
type ScheduleFilter struct {
	Viewer string // required: schedules of the tasks the viewer may see
	TaskID string
	Owner  string
}

// ScheduleStore keeps schedules. Which schedules are due and when a run
// starts are the scheduler's (internal/schedule); the store holds the state
// and claims slots atomically.
type ScheduleStore interface {
	// CreateSchedule stores s (ID, CreatedAt and UpdatedAt are set). The
	// owner must see the task. Returns NOT_FOUND, INVALID_ARGUMENT,
	// CONFLICT (the owner has a schedule of that name on the task).
	CreateSchedule(ctx context.Context, s *Schedule) error
	// FindScheduleByID returns a schedule of a task viewer may see
	// ("" = any). Returns NOT_FOUND.
	FindScheduleByID(ctx context.Context, viewer, id string) (*Schedule, error)
	// FindSchedules lists the schedules of the tasks the viewer may see,
	// by task and name.
	FindSchedules(ctx context.Context, f ScheduleFilter) ([]*Schedule, error)
	// DueSchedules lists the unpaused schedules whose NextFireAt is at or
	// before now, soonest first, at most limit; and the earliest
	// NextFireAt of any unpaused schedule (zero when there is none).
	DueSchedules(ctx context.Context, now time.Time, limit int) (due []*Schedule, earliest time.Time, err error)
	// SetSchedulePaused pauses (with reason, "" when a person did) or
	// resumes a schedule; resuming sets NextFireAt to next. by must own the
	// schedule or its task. Returns NOT_FOUND, PERMISSION_DENIED.
	SetSchedulePaused(ctx context.Context, by, id string, paused bool, reason string, next time.Time) (*Schedule, error)
	// PauseScheduleFor pauses a schedule on Duet's own account (reason
	// required) if its NextFireAt is still slot; false when another
	// scheduler moved it first.
	PauseScheduleFor(ctx context.Context, id string, slot time.Time, reason string) (bool, error)
	// AdvanceSchedule moves NextFireAt from f.Slot to f.Next without a
	// run (a skipped slot, or one whose run could not start: lastError
	// says why); false when another scheduler claimed the slot first.
	AdvanceSchedule(ctx context.Context, f ScheduleFire, lastError string) (bool, error)
	// DeleteSchedule removes a schedule its owner or its task's owner
	// made by hand; a suite's schedule goes with the suite. Returns
	// NOT_FOUND, PERMISSION_DENIED, INVALID_ARGUMENT.
	DeleteSchedule(ctx context.Context, by, id string) error
}
