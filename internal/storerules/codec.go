// Package storerules holds what Duet's two store drivers (internal/sqlite and
// internal/postgres) would otherwise each write: the rules of the store —
// validation, totals, visibility decisions — and the shape of what is
// written, computed once above a small per-engine interface of SQL-level
// methods. The drivers hold the SQL only (placeholders, RETURNING, SKIP
// LOCKED, upserts, batches). duet.Store stays the application's interface.
package storerules

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/duet-test/duet"
)

func NonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// EncodeTags is how a case's tags are stored: JSON, or "" for none.
func EncodeTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

func HeaderNamesJSON(names []string) string {
	if names == nil {
		names = []string{}
	}
	b, _ := json.Marshal(names)
	return string(b)
}

func PrefixColumns(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

func RawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// RunHooks is how a run's hook results are stored: JSON, or "" for none.
type RunHooks struct {
	Results []*duet.StepResult `json:"results"`
	Vars    map[string]any     `json:"vars,omitempty"`
}

func DecodeRunHooks(run *duet.Run, s string) error {
	if s == "" {
		return nil
	}
	var h RunHooks
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return fmt.Errorf("run %s: decoding its hooks' results: %w", run.ID, err)
	}
	run.Hooks, run.HookVars = h.Results, h.Vars
	return nil
}

// StartedExecution brings e, just started (resuming at from), in line with
// what StartExecution stored.
func StartedExecution(e *duet.Execution, from int) {
	e.Status, e.ErrorCode, e.ErrorMessage, e.FinishedAt, e.ResumeFrom = duet.StatusRunning, "", "", nil, 0
	if from == 0 {
		e.Vars = map[string]any{}
		e.Results = []*duet.StepResult{}
		return
	}
	kept := []*duet.StepResult{}
	for _, r := range e.Results {
		if r.Index < from {
			kept = append(kept, r)
		}
	}
	e.Results = kept
}

func MarshalVars(vars map[string]any) (string, error) {
	if vars == nil {
		return "{}", nil
	}
	b, err := json.Marshal(vars)
	return string(b), err
}

// RunConfig is how a task's environments and run hooks are stored: JSON,
// or "" for none.
type RunConfig struct {
	Environments       map[string]*duet.Environment `json:"environments,omitempty"`
	DefaultEnvironment string                       `json:"defaultEnvironment,omitempty"`
	BeforeAll          []duet.Step                  `json:"beforeAll,omitempty"`
	AfterAll           []duet.Step                  `json:"afterAll,omitempty"`
	BeforeEach         []duet.Step                  `json:"beforeEach,omitempty"`
	AfterEach          []duet.Step                  `json:"afterEach,omitempty"`
	HookSaves          []string                     `json:"hookSaves,omitempty"`
	Retries            int                          `json:"retries,omitempty"`
	CaseTimeoutMs      int64                        `json:"caseTimeoutMs,omitempty"`
	Tags               []string                     `json:"tags,omitempty"`
	Parallel           int                          `json:"parallel,omitempty"`
}

func EncodeRunConfig(t *duet.Task) (string, error) {
	c := RunConfig{Environments: t.Environments, DefaultEnvironment: t.DefaultEnvironment, BeforeAll: t.BeforeAll, AfterAll: t.AfterAll,
		BeforeEach: t.BeforeEach, AfterEach: t.AfterEach, HookSaves: t.HookSaves,
		Retries: t.Retries, CaseTimeoutMs: t.CaseTimeoutMs, Tags: t.Tags, Parallel: t.Parallel}
	if len(c.Environments) == 0 && c.DefaultEnvironment == "" && len(c.BeforeAll) == 0 && len(c.AfterAll) == 0 && len(c.BeforeEach) == 0 && len(c.AfterEach) == 0 &&
		c.Retries == 0 && c.CaseTimeoutMs == 0 && len(c.Tags) == 0 && c.Parallel == 0 {
		return "", nil
	}
	b, err := json.Marshal(c)
	return string(b), err
}

func DecodeRunConfig(t *duet.Task, s string) error {
	if s == "" {
		return nil
	}
	var c RunConfig
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return fmt.Errorf("task %s: decoding its environments and hooks: %w", t.ID, err)
	}
	t.Environments, t.DefaultEnvironment, t.BeforeAll, t.AfterAll = c.Environments, c.DefaultEnvironment, c.BeforeAll, c.AfterAll
	t.BeforeEach, t.AfterEach, t.HookSaves = c.BeforeEach, c.AfterEach, c.HookSaves
	t.Retries, t.CaseTimeoutMs, t.Tags, t.Parallel = c.Retries, c.CaseTimeoutMs, c.Tags, c.Parallel
	return nil
}

// EncodeRow is how a data row is stored: JSON, or "" for none.
func EncodeRow(row map[string]any) (string, error) {
	if row == nil {
		return "", nil
	}
	b, err := json.Marshal(row)
	return string(b), err
}

func DecodeRow(s string) (map[string]any, error) {
	if s == "" {
		return nil, nil
	}
	var row map[string]any
	return row, json.Unmarshal([]byte(s), &row)
}

// EncodePostRun is how a task's post-run actions are stored: JSON, or ""
// for none.
func EncodePostRun(actions []*duet.PostRunAction) (string, error) {
	if len(actions) == 0 {
		return "", nil
	}
	b, err := json.Marshal(actions)
	return string(b), err
}

func DecodePostRun(taskID, s string) ([]*duet.PostRunAction, error) {
	if s == "" {
		return nil, nil
	}
	var out []*duet.PostRunAction
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("task %s: decoding post-run actions: %w", taskID, err)
	}
	return out, nil
}

func SortedUnique(in []string, drop string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" || s == drop || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func JoinEvents(es []duet.WebhookEvent) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, ",")
}

func SplitEvents(s string) []duet.WebhookEvent {
	out := []duet.WebhookEvent{}
	for e := range strings.SplitSeq(s, ",") {
		if e != "" {
			out = append(out, duet.WebhookEvent(e))
		}
	}
	return out
}

// EncodeRunHooks is how a run's hook results are stored (RunHooks).
func EncodeRunHooks(results []*duet.StepResult, vars map[string]any) (string, error) {
	b, err := json.Marshal(RunHooks{Results: results, Vars: vars})
	return string(b), err
}

// AIPlanColumns are the columns of ai_plans p that ScanAIPlan reads.
const AIPlanColumns = `p.id, p.task_id, p.case_id, p.case_version, p.step_index, p.step_hash, p.fingerprint, p.actions, p.run_id, p.execution_id, p.created_by, p.hits, p.created_at, p.used_at`

// ScanAIPlan reads a plan of AIPlanColumns.
func ScanAIPlan(r Row) (*duet.AIPlan, error) {
	var p duet.AIPlan
	var actions string
	if err := r.Scan(&p.ID, &p.TaskID, &p.CaseID, &p.CaseVersion, &p.StepIndex, &p.StepHash, &p.Fingerprint, &actions, &p.RunID, &p.ExecutionID, &p.CreatedBy, &p.Hits, TimeOf(&p.CreatedAt), TimeOf(&p.UsedAt)); err != nil {
		return nil, err
	}
	return scanned(&p, json.Unmarshal([]byte(actions), &p.Actions))
}
