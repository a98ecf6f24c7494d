package storetest

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// ApprovalStore is a store that also keeps case approvals.
type ApprovalStore interface {
	duet.Store
	duet.ApprovalStore
}

// ApprovalOpener returns a new, empty store; it registers its own cleanup.
type ApprovalOpener func(t *testing.T) ApprovalStore

// RunApprovals runs the case approval tests against stores made by open.
func RunApprovals(t *testing.T, open ApprovalOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, ApprovalStore)
	}{
		{"ApproveVersion", testApproveVersion},
		{"ApprovalVisibility", testApprovalVisibility},
		{"CaseWriter", testCaseWriter},
		{"ApprovalDestinations", testApprovalDestinations},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

// testApproveVersion: an approval is of one version; editing the case makes
// a new version that is not approved; approving a stale version is a
// CONFLICT; approving twice keeps the first; revoking removes every version.
func testApproveVersion(t *testing.T, s ApprovalStore) {
	su := suite("shop", "a", "b")
	su.Task.SharedWith = []string{"bob"}
	res := mustApply(t, s, "alice", su)
	caseA := res.Cases[0].ID
	a := &duet.CaseApproval{User: "bob", CaseID: caseA, Version: 1}
	if err := s.ApproveCase(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	if a.SourceHash != "h-a" || a.TaskID != res.Task.ID || a.ApprovedAt.IsZero() {
		t.Fatalf("approval: got %+v", a)
	}
	first := a.ApprovedAt
	again := &duet.CaseApproval{User: "bob", CaseID: caseA, Version: 1}
	if err := s.ApproveCase(ctx(t), again); err != nil || !again.ApprovedAt.Equal(first) {
		t.Fatalf("approving again: got %+v %v, want the first approval kept", again, err)
	}
	got, err := s.FindCaseApproval(ctx(t), "bob", caseA, 1)
	if err != nil || got.Version != 1 || got.SourceHash != "h-a" {
		t.Fatalf("FindCaseApproval: got %+v %v", got, err)
	}
	_, err = s.FindCaseApproval(ctx(t), "carol", caseA, 1)
	wantCode(t, err, duet.CodeNotFound)

	// alice edits the case: version 2 is not approved, and approving
	// version 1 now is a conflict.
	edited := suite("shop", "a", "b")
	edited.Task.SharedWith = []string{"bob"}
	edited.Cases[0].Source, edited.Cases[0].SourceHash = "edited", "h-a2"
	if r := mustApply(t, s, "alice", edited); r.Cases[0].Version != 2 {
		t.Fatalf("edit: got %+v", r.Cases[0])
	}
	_, err = s.FindCaseApproval(ctx(t), "bob", caseA, 2)
	wantCode(t, err, duet.CodeNotFound)
	wantCode(t, s.ApproveCase(ctx(t), &duet.CaseApproval{User: "bob", CaseID: caseA, Version: 1}), duet.CodeConflict)
	if err := s.ApproveCase(ctx(t), &duet.CaseApproval{User: "bob", CaseID: caseA, Version: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.ApproveCase(ctx(t), &duet.CaseApproval{User: "bob", CaseID: res.Cases[1].ID, Version: 1}); err != nil {
		t.Fatal(err)
	}
	list, err := s.FindCaseApprovals(ctx(t), "bob", res.Task.ID)
	if err != nil || len(list) != 3 {
		t.Fatalf("FindCaseApprovals: got %d %v, want 3", len(list), err)
	}
	if other, _ := s.FindCaseApprovals(ctx(t), "bob", "task_other"); len(other) != 0 {
		t.Fatalf("approvals of another task: got %d", len(other))
	}
	if err := s.RevokeCaseApproval(ctx(t), "bob", caseA); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{1, 2} {
		_, err = s.FindCaseApproval(ctx(t), "bob", caseA, v)
		wantCode(t, err, duet.CodeNotFound)
	}
	wantCode(t, s.RevokeCaseApproval(ctx(t), "bob", caseA), duet.CodeNotFound)
	if list, _ := s.FindCaseApprovals(ctx(t), "bob", ""); len(list) != 1 {
		t.Fatalf("after revoking: got %d approvals, want 1", len(list))
	}
	wantCode(t, s.ApproveCase(ctx(t), &duet.CaseApproval{User: "bob", CaseID: caseA}), duet.CodeInvalidArgument)
}

// testApprovalDestinations: an approval keeps the destinations hash it was
// given (what it showed); approving the same version for the same
// destinations keeps it, for other destinations replaces it, so it holds
// for the new ones only.
func testApprovalDestinations(t *testing.T, s ApprovalStore) {
	su := suite("shop", "a")
	su.Task.SharedWith = []string{"bob"}
	res := mustApply(t, s, "alice", su)
	id := res.Cases[0].ID
	a := &duet.CaseApproval{User: "bob", CaseID: id, Version: 1, DestinationsHash: "d-one"}
	if err := s.ApproveCase(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindCaseApproval(ctx(t), "bob", id, 1)
	if err != nil || got.DestinationsHash != "d-one" || !got.Holds("d-one") || got.Holds("d-two") {
		t.Fatalf("the approval of d-one: got %+v %v", got, err)
	}
	again := &duet.CaseApproval{User: "bob", CaseID: id, Version: 1, DestinationsHash: "d-one"}
	if err := s.ApproveCase(ctx(t), again); err != nil || !again.ApprovedAt.Equal(a.ApprovedAt) {
		t.Fatalf("approving the same destinations again: got %+v %v, want the first kept", again, err)
	}
	other := &duet.CaseApproval{User: "bob", CaseID: id, Version: 1, DestinationsHash: "d-two"}
	if err := s.ApproveCase(ctx(t), other); err != nil || other.DestinationsHash != "d-two" || other.ApprovedAt.Before(a.ApprovedAt) {
		t.Fatalf("approving other destinations: got %+v %v", other, err)
	}
	got, err = s.FindCaseApproval(ctx(t), "bob", id, 1)
	if err != nil || got.DestinationsHash != "d-two" || got.Holds("d-one") || !got.Holds("d-two") {
		t.Fatalf("after approving d-two: got %+v %v", got, err)
	}
	if list, _ := s.FindCaseApprovals(ctx(t), "bob", res.Task.ID); len(list) != 1 || list[0].DestinationsHash != "d-two" {
		t.Fatalf("FindCaseApprovals: got %+v", list)
	}
	// An approval without destinations (given before they were recorded)
	// holds for none.
	if (&duet.CaseApproval{}).Holds("") {
		t.Fatal("an approval without destinations holds")
	}
}

// testApprovalVisibility: a user approves only cases they may see; a case
// they may not see is NOT_FOUND like a missing one.
func testApprovalVisibility(t *testing.T, s ApprovalStore) {
	res := mustApply(t, s, "alice", suite("private", "a"))
	for _, id := range []string{res.Cases[0].ID, "case_missing"} {
		wantCode(t, s.ApproveCase(ctx(t), &duet.CaseApproval{User: "mallory", CaseID: id, Version: 1}), duet.CodeNotFound)
	}
}

// testCaseWriter: CreatedBy names who wrote the current version: the owner
// who applied it, even over a draft someone else generated; the author of
// a draft, whose later drafts of the key make new versions. A sharee's draft
// is a proposal in the owner's task: no other user's draft (another
// sharee's, the owner's) replaces it, nor does it replace theirs.
func testCaseWriter(t *testing.T, s ApprovalStore) {
	su := suite("shop", "a")
	su.Task.SharedWith = []string{"bob", "carol"}
	res := mustApply(t, s, "alice", su)
	d := &duet.Case{TaskID: res.Task.ID, Key: "gen", Title: "g", Source: "s1", SourceHash: "g1", CreatedBy: "bob", Steps: []duet.Step{step(0, "true")}}
	if err := s.SaveDraftCase(ctx(t), d); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"carol", "alice"} {
		o := &duet.Case{TaskID: res.Task.ID, Key: "gen", Title: "g", Source: "by " + other, SourceHash: "o", CreatedBy: other, Steps: []duet.Step{step(0, "true")}}
		wantCode(t, s.SaveDraftCase(ctx(t), o), duet.CodeConflict)
	}
	d2 := &duet.Case{TaskID: res.Task.ID, Key: "gen", Title: "g", Source: "s2", SourceHash: "g2", CreatedBy: "bob", Steps: []duet.Step{step(0, "true")}}
	if err := s.SaveDraftCase(ctx(t), d2); err != nil {
		t.Fatal(err)
	}
	if c, err := s.FindCaseByID(ctx(t), "alice", d.ID); err != nil || c.Version != 2 || c.CreatedBy != "bob" || c.Source != "s2" || c.Status != duet.CaseDraft {
		t.Fatalf("draft v2: got %+v %v, want bob's second draft", c, err)
	}
	// alice's own draft is hers alone too.
	mine := &duet.Case{TaskID: res.Task.ID, Key: "mine", Title: "m", Source: "m1", SourceHash: "m1", CreatedBy: "alice", Steps: []duet.Step{step(0, "true")}}
	if err := s.SaveDraftCase(ctx(t), mine); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.SaveDraftCase(ctx(t), &duet.Case{TaskID: res.Task.ID, Key: "mine", Title: "m", Source: "bob's", SourceHash: "b", CreatedBy: "bob",
		Steps: []duet.Step{step(0, "true")}}), duet.CodeConflict)
	if c, err := s.FindCaseByID(ctx(t), "alice", mine.ID); err != nil || c.Version != 1 || c.CreatedBy != "alice" || c.Source != "m1" {
		t.Fatalf("alice's draft after bob's attempt: got %+v %v", c, err)
	}
	// alice's suite takes the key over: her version, her writing.
	su.Cases = append(su.Cases, &duet.Case{Key: "gen", Title: "g", Source: "alice's", SourceHash: "a1", Steps: []duet.Step{step(0, "true")}})
	mustApply(t, s, "alice", su)
	if c, err := s.FindCaseByID(ctx(t), "bob", d.ID); err != nil || c.Version != 3 || c.CreatedBy != "alice" || c.Status != duet.CaseActive {
		t.Fatalf("applied over the draft: got %+v %v, want version 3 written by alice", c, err)
	}
}

// testExecutionPages: a run's executions page in order without their
// results, and with them on request; the cursor is opaque and checked.
func testExecutionPages(t *testing.T, s duet.Store) {
	const n = 7
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	res := mustApply(t, s, "alice", suite("paged", keys...))
	cases, _, _, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimRunByID(ctx(t), run.ID, "w", time.Minute)
	if err != nil || c == nil {
		t.Fatalf("claim: %+v %v", c, err)
	}
	l := duet.LeaseOf(c, "w")
	now := time.Now()
	execs[3].StartedAt = &now
	if err := s.StartExecution(ctx(t), l, execs[3]); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveStepResult(ctx(t), l, execs[3].ID, &duet.StepResult{Index: 0, Kind: duet.StepAssert, Name: "true", Status: duet.StatusPassed}, map[string]any{"v": "x"}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	cursor := ""
	pages := 0
	for {
		page, next, err := s.FindExecutionPage(ctx(t), duet.ExecutionFilter{RunID: run.ID, Cursor: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, x := range page {
			seen = append(seen, x.CaseKey)
			if len(x.Results) != 0 || x.Vars != nil || x.Steps != nil {
				t.Fatalf("a summary page carries results, variables or steps: %+v", x)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || fmt.Sprint(seen) != fmt.Sprint(keys) {
		t.Fatalf("pages: got %d pages %v, want 3 pages %v", pages, seen, keys)
	}
	full, next, err := s.FindExecutionPage(ctx(t), duet.ExecutionFilter{RunID: run.ID, Limit: 4, Results: true})
	if err != nil || len(full) != 4 || next == "" {
		t.Fatalf("page with results: got %d %q %v", len(full), next, err)
	}
	if x := full[3]; len(x.Results) != 1 || x.Vars["v"] != "x" || len(x.Steps) != 1 || x.Status != duet.StatusRunning {
		t.Fatalf("execution with results: got %+v", x)
	}
	for _, bad := range []string{"!!", "azpy", encodeOrdinal(-5)} {
		_, _, err := s.FindExecutionPage(ctx(t), duet.ExecutionFilter{RunID: run.ID, Cursor: bad})
		wantCode(t, err, duet.CodeInvalidArgument)
	}
}

// encodeOrdinal forges a cursor in the shape the SQLite store uses: it must
// still be refused when the ordinal is impossible.
func encodeOrdinal(n int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("k:" + strconv.Itoa(n)))
}
