package api

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/step"
)

// CaseCompiler compiles the source of one case (an item of a suite's
// cases) for task as user writes it (compiler.CompileCase with the user's
// MCP registrations and testIDAttr, the task's testIdAttribute), for
// SaveCase and TrySteps.
type CaseCompiler func(ctx context.Context, user string, src []byte, task *duet.Task, testIDAttr string) (*duet.Case, error)

// SaveCaseIn is one case to add to a task (or a new version of one of its
// cases, by key): what the console's recorder saves.
type SaveCaseIn struct {
	TaskID string `json:"taskId"`
	Source string `json:"source" jsonschema:"the case, as an item of a suite's cases list (key, title, steps)"`
}

// SavedCase is what SaveCase did.
type SavedCase struct {
	CaseID  string           `json:"caseId"`
	Key     string           `json:"key"`
	Version int              `json:"version"`
	Action  duet.ApplyAction `json:"action"`
	Draft   bool             `json:"draft,omitempty"` // saved as a draft: the task is shared with the caller, not theirs
}

// SaveCase compiles one case for a task with the compiler's checks of
// `duet apply` and stores it. For the task's owner it goes through the
// apply path (Store.ApplySuite) with the task, its other active cases and
// its suite schedules as they are, so that only this case changes: a new
// case, or a new version of the case with its key; a normal case in
// every way; the task's kept suite source gets the case too (mergedSource),
// in the same transaction. For a user the task is shared with, it is a draft of theirs
// (as the agent's drafts), which the owner's approval makes a case.
// Returns NOT_FOUND, INVALID_ARGUMENT (with the compiler's messages),
// TOO_LARGE, CONFLICT (a draft's key taken by another's case).
func (s *Service) SaveCase(ctx context.Context, c duet.Caller, in SaveCaseIn) (SavedCase, error) {
	return govern(ctx, s, c, "saveCase", in, func(ctx context.Context) (SavedCase, error) {
		t, cs, err := s.compileCaseFor(ctx, c, in.TaskID, in.Source)
		if err != nil {
			return SavedCase{}, err
		}
		if t.Owner != c.UserID {
			cs.TaskID, cs.CreatedBy = t.ID, c.UserID
			if err := s.d.Store.SaveDraftCase(ctx, cs); err != nil {
				return SavedCase{}, err
			}
			return SavedCase{CaseID: cs.ID, Key: cs.Key, Version: cs.Version, Action: duet.ApplyUpdated, Draft: true}, nil
		}
		suite := &duet.Suite{Task: *t, Via: duet.SavedByRecorder}
		for old, err := range duet.AllCases(ctx, s.d.Store.FindCases, duet.CaseFilter{TaskID: t.ID}) {
			if err != nil {
				return SavedCase{}, err
			}
			if old.Key != cs.Key {
				suite.Cases = append(suite.Cases, old)
			}
		}
		suite.Cases = append(suite.Cases, cs)
		suite.Source = s.mergedSource(ctx, c, t.ID, cs.Key, in.Source) // kept in the save's transaction
		scheds, err := s.d.Store.FindSchedules(ctx, duet.ScheduleFilter{Viewer: c.UserID, TaskID: t.ID, Owner: c.UserID})
		if err != nil {
			return SavedCase{}, err
		}
		for _, sc := range scheds {
			if sc.Source == duet.ScheduleFromSuite {
				suite.Schedules = append(suite.Schedules, sc)
			}
		}
		res, err := s.d.Store.ApplySuite(ctx, c.UserID, suite)
		if err != nil {
			return SavedCase{}, err
		}
		for _, r := range res.Cases {
			if r.Key == cs.Key {
				return SavedCase{CaseID: r.ID, Key: r.Key, Version: r.Version, Action: r.Action}, nil
			}
		}
		return SavedCase{}, duet.Errorf(duet.CodeInternal, "the case %q was not applied", cs.Key)
	})
}

// TryStepsIn is steps of a case a tester tries in their live session
// ("Try this step"): the case as they are writing it (an item of a
// suite's cases) and the steps to run, 1 the first of its own (To 0: From
// alone).
type TryStepsIn struct {
	TaskID string `json:"taskId"`
	Source string `json:"source"`
	From   int    `json:"from"`
	To     int    `json:"to,omitempty"`
}

// TrySteps checks that the caller may run the task (its owner, or a user
// it is shared with, as for a run), compiles the case with the checks of
// `duet apply` as they write it (their MCP registrations), and calls try
// with the task and the case, as one governed operation (trySteps,
// audited with the caller's callSource). Nothing is stored. Returns
// NOT_FOUND, INVALID_ARGUMENT (the compiler's messages), TOO_LARGE and
// try's errors.
func (s *Service) TrySteps(ctx context.Context, c duet.Caller, in TryStepsIn, try func(ctx context.Context, t *duet.Task, cs *duet.Case) error) error {
	_, err := govern(ctx, s, c, "trySteps", in, func(ctx context.Context) (struct{}, error) {
		t, cs, err := s.compileCaseFor(ctx, c, in.TaskID, in.Source)
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, try(ctx, t, cs)
	})
	return err
}

// compileCaseFor compiles src, one case, for the task taskID as c writes
// it: NOT_FOUND for a task c cannot see, INVALID_ARGUMENT with the
// compiler's messages, TOO_LARGE.
func (s *Service) compileCaseFor(ctx context.Context, c duet.Caller, taskID, src string) (*duet.Task, *duet.Case, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil, duet.Errorf(duet.CodeInvalidArgument, "the case is empty")
	}
	if len(src) > MaxSuiteBytes {
		return nil, nil, duet.Errorf(duet.CodeTooLarge, "the case is %d bytes; the limit is %d", len(src), MaxSuiteBytes)
	}
	if s.d.CompileCase == nil {
		return nil, nil, duet.Errorf(duet.CodeInternal, "no case compiler")
	}
	t, err := s.d.Store.FindTaskByID(ctx, c.UserID, taskID)
	if err != nil {
		return nil, nil, err
	}
	cs, err := s.d.CompileCase(ctx, c.UserID, []byte(src), t, s.testIDAttribute(ctx, t))
	if err != nil {
		if duet.ErrorCode(err) == duet.CodeInternal {
			return nil, nil, err
		}
		return nil, nil, duet.WrapError(duet.CodeInvalidArgument, err, "%s", duet.ErrorMessage(err))
	}
	return t, cs, nil
}

// SuiteSourceOut is the YAML a task was last applied from, for its
// editor.
type SuiteSourceOut struct {
	duet.SuiteSource
	// ChangedSince are the keys of the task's cases changed since the
	// source was applied (a case the recorder saved): applying the source
	// again makes each of them what the source says, or archives it when
	// the source does not have it.
	ChangedSince []string `json:"changedSince"`
}

// GetSuiteSource returns the YAML task taskID was last applied from, to
// edit it and apply it again. Only the task's owner applies its suite,
// and so only they read its source: PERMISSION_DENIED for anyone else who
// can see the task, NOT_FOUND for those who cannot (and for a task never
// applied from YAML since sources are kept).
func (s *Service) GetSuiteSource(ctx context.Context, c duet.Caller, taskID string) (SuiteSourceOut, error) {
	return govern(ctx, s, c, "getSuiteSource", map[string]string{"taskId": taskID}, func(ctx context.Context) (SuiteSourceOut, error) {
		t, err := s.d.Store.FindTaskByID(ctx, c.UserID, taskID)
		if err != nil {
			return SuiteSourceOut{}, err
		}
		if t.Owner != c.UserID {
			return SuiteSourceOut{}, duet.Errorf(duet.CodePermissionDenied, "only the owner of task %s (%s) applies its suite and reads its source", t.Name, t.Owner)
		}
		src, err := s.d.Store.FindSuiteSource(ctx, t.ID)
		if err != nil {
			if duet.ErrorCode(err) == duet.CodeNotFound {
				err = duet.Errorf(duet.CodeNotFound, "task %s has no suite source: it was applied before Duet kept sources; apply its YAML once more", t.Name)
			}
			return SuiteSourceOut{}, err
		}
		changed, err := s.changedSince(ctx, t.ID, src.UpdatedAt)
		if err != nil {
			return SuiteSourceOut{}, err
		}
		return SuiteSourceOut{SuiteSource: *src, ChangedSince: changed}, nil
	})
}

// changedSince returns the keys of the active cases of task taskID
// changed after since.
func (s *Service) changedSince(ctx context.Context, taskID string, since time.Time) ([]string, error) {
	out := []string{}
	for cs, err := range duet.AllCases(ctx, s.d.Store.FindCases, duet.CaseFilter{TaskID: taskID}) {
		if err != nil {
			return nil, err
		}
		if cs.Status == duet.CaseActive && cs.UpdatedAt.After(since) {
			out = append(out, cs.Key)
		}
	}
	return out, nil
}

// mergedSource is task taskID's kept suite source with item, the case the
// recorder saves for its owner, merged in (mergeCase): the source the
// save's apply keeps, so that the suite editor opens the suite with it.
// Nil leaves the source as it is: when the task has none, when other
// cases changed since it (the editor must still name them), or when the
// merge cannot be made or does not compile.
func (s *Service) mergedSource(ctx context.Context, c duet.Caller, taskID, key, item string) *duet.SuiteSource {
	src, err := s.d.Store.FindSuiteSource(ctx, taskID)
	if err != nil {
		return nil
	}
	changed, err := s.changedSince(ctx, taskID, src.UpdatedAt)
	if err != nil || slices.ContainsFunc(changed, func(k string) bool { return k != key }) {
		return nil
	}
	merged, ok := mergeCase(src.Source, key, item)
	if !ok || len(merged) > duet.MaxSuiteSourceBytes {
		return nil
	}
	if _, err := s.d.Compile(ctx, c.UserID, []byte(merged), src.Name, nil); err != nil {
		return nil
	}
	return &duet.SuiteSource{Name: src.Name, Source: merged, Replaces: &src.UpdatedAt}
}

// testIDAttribute returns the testIdAttribute of task t as its suite was
// last applied ("" data-testid; also when no source is kept): what its
// cases' testId locators name, and so what the recorder records and a
// case saved or tried later compiles with.
func (s *Service) testIDAttribute(ctx context.Context, t *duet.Task) string {
	src, err := s.d.Store.FindSuiteSource(ctx, t.ID)
	if err != nil {
		return ""
	}
	root, derr := step.Parse([]byte(src.Source))
	if derr != nil {
		return ""
	}
	a, _ := root.Get("task").Get("testIdAttribute").Str()
	return a
}

// RecordIn asks for a live recording session on a task.
type RecordIn struct {
	TaskID      string `json:"taskId"`
	Environment string `json:"environment,omitempty"`
	Device      string `json:"device,omitempty"`
}

// RecordTarget is where a recording session opens: the task, the base URL
// of its environment (which the network guard allows, as in a run), and
// the device.
type RecordTarget struct {
	TaskID      string
	Environment string // the environment's name ("" the task's default)
	BaseURL     string
	Device      string
	TestIDAttr  string // the task's testIdAttribute ("" data-testid)
}

// Record checks that the caller may run the task (its owner, or a user it
// is shared with) and calls open with where its session opens, as one
// governed operation (startRecording). Returns NOT_FOUND,
// INVALID_ARGUMENT (an unknown environment, a task without a base URL)
// and open's errors.
func (s *Service) Record(ctx context.Context, c duet.Caller, in RecordIn, open func(ctx context.Context, t RecordTarget) error) error {
	_, err := govern(ctx, s, c, "startRecording", in, func(ctx context.Context) (struct{}, error) {
		t, err := s.d.Store.FindTaskByID(ctx, c.UserID, in.TaskID)
		if err != nil {
			return struct{}{}, err
		}
		envName, env, err := t.Environment(in.Environment)
		if err != nil {
			return struct{}{}, err
		}
		base := t.BaseURL
		if env != nil && env.BaseURL != "" {
			base = env.BaseURL
		}
		if base == "" {
			return struct{}{}, duet.Errorf(duet.CodeInvalidArgument, "task %s has no baseURL to record against", t.Name)
		}
		device := strings.TrimSpace(in.Device)
		if device == "" {
			device = t.Device
		}
		return struct{}{}, open(ctx, RecordTarget{TaskID: t.ID, Environment: envName, BaseURL: base, Device: device, TestIDAttr: s.testIDAttribute(ctx, t)})
	})
	return err
}

// Govern runs fn as the operation op of c through the governance pipeline
// (identity, caps, a timeout, the size of args, one audit record): for
// the console's operations on what lives in the process only (a recording
// session's input).
func (s *Service) Govern(ctx context.Context, c duet.Caller, op string, args any, fn func(ctx context.Context) error) error {
	_, err := govern(ctx, s, c, op, args, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// ValidateIn is a suite to check.
type ValidateIn struct {
	Source string `json:"source" jsonschema:"the suite, in the declarative YAML format (docs/suite-format.md)"`
}

// Problem is one error of a source at its line and column (1 the first).
type Problem struct {
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// Validation is what ValidateSuite found: nothing (Valid), or the
// compiler's problems, each at its line.
type Validation struct {
	Valid    bool      `json:"valid"`
	Problems []Problem `json:"problems"`
}

// ValidateSuite compiles a suite as ApplySuite does (the caller's MCP
// registrations, every check of `duet apply`) and stores nothing: the
// suite editor's inline errors. Returns TOO_LARGE; a suite that does not
// compile is a Validation with its problems, not an error.
func (s *Service) ValidateSuite(ctx context.Context, c duet.Caller, in ApplyIn) (Validation, error) {
	return govern(ctx, s, c, "validateSuite", in, func(ctx context.Context) (Validation, error) {
		if len(in.Source) > MaxSuiteBytes {
			return Validation{}, duet.Errorf(duet.CodeTooLarge, "the suite is %d bytes; the limit is %d", len(in.Source), MaxSuiteBytes)
		}
		if strings.TrimSpace(in.Source) == "" {
			return Validation{Problems: []Problem{{Line: 1, Col: 1, Message: "the suite is empty"}}}, nil
		}
		_, err := s.d.Compile(ctx, c.UserID, []byte(in.Source), "suite.yaml", nil)
		if err == nil {
			return Validation{Valid: true, Problems: []Problem{}}, nil
		}
		var errs *compiler.Errors
		if !errors.As(err, &errs) {
			if duet.ErrorCode(err) == duet.CodeInternal {
				return Validation{}, err
			}
			return Validation{Problems: []Problem{{Line: 1, Col: 1, Message: duet.ErrorMessage(err)}}}, nil
		}
		v := Validation{Problems: make([]Problem, 0, len(errs.List))}
		for _, d := range errs.List {
			v.Problems = append(v.Problems, Problem{Line: max(d.Line, 1), Col: max(d.Col, 1), Message: d.Message})
		}
		return v, nil
	})
}
