package api

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/contract"
	"github.com/duet-test/duet/internal/schedule"
)

// ScheduleIn is a schedule to make.
type ScheduleIn struct {
	TaskID   string `json:"taskId" jsonschema:"the task to run"`
	Name     string `json:"name,omitempty" jsonschema:"a name, unique among your schedules of the task (default: its timing)"`
	Cron     string `json:"cron,omitempty" jsonschema:"five cron fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily; or give every"`
	TimeZone string `json:"timeZone,omitempty" jsonschema:"the IANA time zone cron is read in (default UTC)"`
	Every    string `json:"every,omitempty" jsonschema:"an interval such as 15m or 1h (at least 1m); or give cron"`
	Missed   string `json:"missed,omitempty" jsonschema:"skip (default): slots missed while no Duet instance ran are dropped; runOnce: one run for them"`
	Overlap  string `json:"overlap,omitempty" jsonschema:"skip (default): no run for a slot while the previous run is queued or running; queue: run anyway, queued behind it"`
}

// ScheduleView is a schedule as the API shows it.
type ScheduleView struct {
	ID           string     `json:"id"`
	TaskID       string     `json:"taskId"`
	Owner        string     `json:"owner" jsonschema:"whom its runs run as, with their credentials"`
	Name         string     `json:"name"`
	Source       string     `json:"source" jsonschema:"suite (declared in the task's suite) or user (made by hand)"`
	Timing       string     `json:"timing" jsonschema:"the timing in words"`
	Cron         string     `json:"cron,omitempty"`
	TimeZone     string     `json:"timeZone,omitempty"`
	Every        string     `json:"every,omitempty"`
	Missed       string     `json:"missed"`
	Overlap      string     `json:"overlap"`
	Paused       bool       `json:"paused"`
	PausedReason string     `json:"pausedReason,omitempty" jsonschema:"why Duet paused it (its owner lost access to the task, its token was revoked); empty when a person did"`
	NextFireAt   *time.Time `json:"nextFireAt,omitempty" jsonschema:"the next slot (absent while paused)"`
	NextFires    []string   `json:"nextFires,omitempty" jsonschema:"the next few slots, RFC 3339 in the schedule's time zone"`
	LastFireAt   *time.Time `json:"lastFireAt,omitempty" jsonschema:"the slot of the last run it started"`
	LastRunID    string     `json:"lastRunId,omitempty"`
	LastError    string     `json:"lastError,omitempty" jsonschema:"why the last slot started no run (skipped, missed, refused)"`
	CreatedAt    time.Time  `json:"createdAt"`
}

// ScheduleList is a list of schedules.
type ScheduleList struct {
	Schedules []ScheduleView `json:"schedules"`
}

// NewScheduleView returns the view of s with its next n slots after now.
func NewScheduleView(s *duet.Schedule, now time.Time, n int) ScheduleView {
	v := ScheduleView{ID: s.ID, TaskID: s.TaskID, Owner: s.Owner, Name: s.Name, Source: string(s.Source), Timing: schedule.Describe(s),
		Cron: s.Cron, TimeZone: s.TimeZone, Missed: string(s.Missed), Overlap: string(s.Overlap), Paused: s.Paused, PausedReason: s.PausedReason,
		LastFireAt: s.LastFireAt, LastRunID: s.LastRunID, LastError: s.LastError, CreatedAt: s.CreatedAt}
	if s.Every > 0 {
		v.Every = s.Every.String()
	}
	if s.Paused {
		return v
	}
	next := s.NextFireAt
	v.NextFireAt = &next
	t, err := schedule.Of(s)
	if err != nil {
		return v
	}
	loc := time.UTC
	if s.TimeZone != "" {
		if l, err := time.LoadLocation(s.TimeZone); err == nil {
			loc = l
		}
	}
	at := next
	if at.Before(now) {
		_, at, _ = t.Span(at, now)
	}
	for range n {
		v.NextFires = append(v.NextFires, at.In(loc).Format(time.RFC3339))
		at = t.Next(at)
	}
	return v
}

// scheduleFrom checks a schedule's timing and policies and computes its
// first slot after now. Returns INVALID_ARGUMENT.
func scheduleFrom(in ScheduleIn, now time.Time) (*duet.Schedule, error) {
	var every time.Duration
	if e := strings.TrimSpace(in.Every); e != "" {
		var err error
		if every, err = time.ParseDuration(e); err != nil || every <= 0 {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "every must be a duration such as 15m or 1h, got %q", in.Every)
		}
	}
	t, err := schedule.Parse(in.Cron, strings.TrimSpace(in.TimeZone), every)
	if err != nil {
		return nil, err
	}
	missed, overlap, err := schedule.Policies(in.Missed, in.Overlap)
	if err != nil {
		return nil, err
	}
	s := &duet.Schedule{TaskID: in.TaskID, Cron: strings.TrimSpace(in.Cron), TimeZone: strings.TrimSpace(in.TimeZone), Every: every,
		Missed: missed, Overlap: overlap, NextFireAt: t.Next(now)}
	s.Name = strings.TrimSpace(in.Name)
	if s.Name == "" {
		s.Name = schedule.DefaultName(s)
	}
	if len(s.Name) > 100 || strings.ContainsAny(s.Name, "\n\r\t") {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a schedule's name is one line of at most 100 characters")
	}
	return s, nil
}

// mayRun refuses a caller whose OAuth token may only read: a schedule
// starts runs. Returns INSUFFICIENT_SCOPE.
func mayRun(c duet.Caller) error {
	if !c.Access.Allows(true) {
		return duet.Errorf(duet.CodeInsufficientScope, "a schedule starts runs: the access token needs the run scope")
	}
	return nil
}

// nextFires is how many slots a schedule's view lists.
const nextFires = 3

// CreateSchedule makes a schedule of a task the caller can see, owned by
// the caller: its runs run as the caller, with the caller's credentials.
// Made with a personal access token, it pauses when that token is revoked.
// Returns NOT_FOUND, INVALID_ARGUMENT, CONFLICT, INSUFFICIENT_SCOPE.
func (s *Service) CreateSchedule(ctx context.Context, c duet.Caller, in ScheduleIn) (ScheduleView, error) {
	return govern(ctx, s, c, "createSchedule", in, func(ctx context.Context) (ScheduleView, error) {
		if err := mayRun(c); err != nil {
			return ScheduleView{}, err
		}
		now := time.Now()
		sc, err := scheduleFrom(in, now)
		if err != nil {
			return ScheduleView{}, err
		}
		t, err := s.task(ctx, c, in.TaskID) // its id, or a name the caller sees once
		if err != nil {
			return ScheduleView{}, err
		}
		sc.TaskID = t.ID
		sc.Owner, sc.TokenID, sc.Source = c.UserID, c.TokenID, duet.ScheduleFromUser
		if err := s.d.Store.CreateSchedule(ctx, sc); err != nil {
			return ScheduleView{}, err
		}
		s.scheduleChanged()
		return NewScheduleView(sc, now, nextFires), nil
	})
}

// ScheduleListIn selects schedules.
type ScheduleListIn struct {
	TaskID string `json:"taskId,omitempty"`
}

// ListSchedules lists the schedules of the tasks the caller can see (of
// one task with TaskID), with their next slots.
func (s *Service) ListSchedules(ctx context.Context, c duet.Caller, in ScheduleListIn) (ScheduleList, error) {
	return govern(ctx, s, c, "listSchedules", in, func(ctx context.Context) (ScheduleList, error) {
		taskID, err := s.taskID(ctx, c, in.TaskID)
		if err != nil {
			return ScheduleList{}, err
		}
		list, err := s.d.Store.FindSchedules(ctx, duet.ScheduleFilter{Viewer: c.UserID, TaskID: taskID})
		if err != nil {
			return ScheduleList{}, err
		}
		now := time.Now()
		return ScheduleList{Schedules: catalog.Views(list, func(sc *duet.Schedule) ScheduleView {
			return NewScheduleView(sc, now, nextFires)
		})}, nil
	})
}

// GetSchedule returns one schedule of a task the caller can see. Returns
// NOT_FOUND.
func (s *Service) GetSchedule(ctx context.Context, c duet.Caller, id string) (ScheduleView, error) {
	return govern(ctx, s, c, "getSchedule", nil, func(ctx context.Context) (ScheduleView, error) {
		sc, err := s.d.Store.FindScheduleByID(ctx, c.UserID, id)
		if err != nil {
			return ScheduleView{}, err
		}
		return NewScheduleView(sc, time.Now(), nextFires), nil
	})
}

// PauseSchedule pauses a schedule: its owner or its task's owner may.
// Returns NOT_FOUND, PERMISSION_DENIED, INSUFFICIENT_SCOPE.
func (s *Service) PauseSchedule(ctx context.Context, c duet.Caller, id string) (ScheduleView, error) {
	return s.setPaused(ctx, c, "pauseSchedule", id, true)
}

// ResumeSchedule resumes a paused schedule from its next slot to come (the
// slots it was paused through are not run). Returns NOT_FOUND,
// PERMISSION_DENIED, INSUFFICIENT_SCOPE.
func (s *Service) ResumeSchedule(ctx context.Context, c duet.Caller, id string) (ScheduleView, error) {
	return s.setPaused(ctx, c, "resumeSchedule", id, false)
}

func (s *Service) setPaused(ctx context.Context, c duet.Caller, op, id string, paused bool) (ScheduleView, error) {
	return govern(ctx, s, c, op, nil, func(ctx context.Context) (ScheduleView, error) {
		if err := mayRun(c); err != nil {
			return ScheduleView{}, err
		}
		sc, err := s.d.Store.FindScheduleByID(ctx, c.UserID, id)
		if err != nil {
			return ScheduleView{}, err
		}
		t, err := schedule.Of(sc)
		if err != nil {
			return ScheduleView{}, err
		}
		now := time.Now()
		sc, err = s.d.Store.SetSchedulePaused(ctx, c.UserID, id, paused, "", t.Next(now))
		if err != nil {
			return ScheduleView{}, err
		}
		s.scheduleChanged()
		return NewScheduleView(sc, now, nextFires), nil
	})
}

// RemoveSchedule removes a schedule made by hand (a suite's goes with the
// suite): its owner or its task's owner may. Returns NOT_FOUND,
// PERMISSION_DENIED, INVALID_ARGUMENT, INSUFFICIENT_SCOPE.
func (s *Service) RemoveSchedule(ctx context.Context, c duet.Caller, id string) (Empty, error) {
	return govern(ctx, s, c, "deleteSchedule", nil, func(ctx context.Context) (Empty, error) {
		if err := mayRun(c); err != nil {
			return Empty{}, err
		}
		return Empty{}, s.d.Store.DeleteSchedule(ctx, c.UserID, id)
	})
}

func (s *Service) scheduleChanged() {
	if s.d.ScheduleChanged != nil {
		s.d.ScheduleChanged()
	}
}

// AlertList is the contract alerts of a task's cases.
type AlertList struct {
	Alerts []*duet.ContractAlert `json:"alerts"`
	Broken int                   `json:"broken" jsonschema:"how many cases an MCP tool change broke (their next run fails)"`
}

// ContractAlerts lists the contract alerts of the current versions of the
// cases of a task the caller can see: cases an MCP tool they call changed
// under, broken or changed compatibly (internal/contract). Returns
// NOT_FOUND.
func (s *Service) ContractAlerts(ctx context.Context, c duet.Caller, taskID string) (AlertList, error) {
	return govern(ctx, s, c, "listContractAlerts", nil, func(ctx context.Context) (AlertList, error) {
		t, err := s.task(ctx, c, taskID) // its id, or a name the caller sees once
		if err != nil {
			return AlertList{}, err
		}
		return s.alertList(ctx, c, t.ID)
	})
}

// alertList is the contract alerts of the task taskID ("": of every task)
// that c can see, and how many are broken.
func (s *Service) alertList(ctx context.Context, c duet.Caller, taskID string) (AlertList, error) {
	alerts, err := s.d.Store.FindContractAlerts(ctx, c.UserID, taskID)
	if err != nil {
		return AlertList{}, err
	}
	out := AlertList{Alerts: alerts}
	for _, a := range alerts {
		if a.Broken {
			out.Broken++
		}
	}
	return out, nil
}

// CatalogDiff is what changed between two archived catalogs of a server.
type CatalogDiff struct {
	Server  string      `json:"server"`
	From    *time.Time  `json:"from,omitempty" jsonschema:"when the older catalog was synced (absent when no sync changed the catalog yet)"`
	To      *time.Time  `json:"to,omitempty" jsonschema:"when the newer catalog was synced"`
	Changes []ToolDiff  `json:"changes"`
	History []time.Time `json:"history" jsonschema:"the sync times of the earlier catalogs kept, newest first (back selects one: 1 is the newest)"`
}

// ToolDiff is how one tool changed.
type ToolDiff struct {
	Tool    string   `json:"tool"`
	Changes []string `json:"changes"`
}

// ServerDiff shows what changed between the caller's registration's
// current archived catalog and the one back syncs before it (1: the one
// the latest changing sync replaced). Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) ServerDiff(ctx context.Context, c duet.Caller, ref string, back int) (CatalogDiff, error) {
	return govern(ctx, s, c, "diffServer", nil, func(ctx context.Context) (CatalogDiff, error) {
		reg, tools, err := s.d.MCP.Server(ctx, c.UserID, ref)
		if err != nil {
			return CatalogDiff{}, err
		}
		hist, err := s.d.Store.FindCatalogHistory(ctx, reg.ID)
		if err != nil {
			return CatalogDiff{}, err
		}
		out := CatalogDiff{Server: reg.Name, To: reg.SyncedAt, Changes: []ToolDiff{}, History: []time.Time{}}
		for _, h := range hist {
			out.History = append(out.History, h.SyncedAt)
		}
		if back <= 0 {
			back = 1
		}
		if len(hist) == 0 {
			return out, nil
		}
		if back > len(hist) {
			return CatalogDiff{}, duet.Errorf(duet.CodeInvalidArgument, "%s keeps %d earlier catalog(s); back must be 1 to %d", reg.Name, len(hist), len(hist))
		}
		from := hist[back-1]
		out.From = &from.SyncedAt
		changes := contract.DiffAll(from.Tools, tools)
		for _, name := range slices.Sorted(maps.Keys(changes)) {
			out.Changes = append(out.Changes, ToolDiff{Tool: name, Changes: changes[name]})
		}
		return out, nil
	})
}
