package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testCaseVersions: every save that gives a case a new version keeps that
// version's source, in the save's transaction: an apply (new and changed
// cases, not unchanged or archived ones), the recorder's save, a draft's
// save; a save that fails keeps none. Versions list newest first, page by
// page, without their source; one version has it.
func testCaseVersions(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("versioned", "a", "b"))
	ids := map[string]string{}
	for _, c := range res.Cases {
		ids[c.Key] = c.ID
	}
	wantVersions := func(key string, want ...duet.CaseSaveVia) []*duet.CaseVersion {
		t.Helper()
		got, more, err := s.FindCaseVersions(ctx(t), ids[key], 0, 0)
		if err != nil || more || len(got) != len(want) {
			t.Fatalf("versions of %s: %d %v %v, want %d", key, len(got), more, err, len(want))
		}
		for i, v := range got {
			if v.Version != len(want)-i || v.Via != want[len(want)-1-i] || v.CaseID != ids[key] || v.Source != "" || v.SavedAt.IsZero() {
				t.Fatalf("version %d of %s: %+v, want version %d via %s", i, key, v, len(want)-i, want[len(want)-1-i])
			}
		}
		return got
	}
	first := wantVersions("a", duet.SavedByApply)
	if first[0].SavedBy != "alice" || first[0].Title != "title a" || first[0].SourceHash != "h-a" || !first[0].SavedAt.Equal(res.Task.UpdatedAt.Truncate(time.Microsecond)) {
		t.Fatalf("the first version: %+v (applied at %v)", first[0], res.Task.UpdatedAt)
	}
	v1, err := s.FindCaseVersion(ctx(t), ids["a"], 1)
	if err != nil || v1.Source != "src a" || v1.Version != 1 || v1.Via != duet.SavedByApply {
		t.Fatalf("version 1 of a: %+v %v", v1, err)
	}

	mustApply(t, s, "alice", suite("versioned", "a", "b")) // unchanged: no new version
	wantVersions("a", duet.SavedByApply)

	changed := suite("versioned", "a", "b")
	changed.Cases[0].Source, changed.Cases[0].SourceHash = "src a\nsecond", "h-a2"
	mustApply(t, s, "alice", changed)
	wantVersions("a", duet.SavedByApply, duet.SavedByApply)
	wantVersions("b", duet.SavedByApply)
	if v2, err := s.FindCaseVersion(ctx(t), ids["a"], 2); err != nil || v2.Source != "src a\nsecond" {
		t.Fatalf("version 2 of a: %+v %v", v2, err)
	}
	if v1, err := s.FindCaseVersion(ctx(t), ids["a"], 1); err != nil || v1.Source != "src a" {
		t.Fatalf("version 1 of a after version 2: %+v %v", v1, err)
	}

	recorded := suite("versioned", "a", "b")
	recorded.Cases[0].Source, recorded.Cases[0].SourceHash = "src a\nsecond", "h-a2"
	recorded.Cases[1].Source, recorded.Cases[1].SourceHash = "src b\nrecorded", "h-b2"
	recorded.Via = duet.SavedByRecorder
	mustApply(t, s, "alice", recorded)
	wantVersions("a", duet.SavedByApply, duet.SavedByApply)
	wantVersions("b", duet.SavedByApply, duet.SavedByRecorder)

	// An apply that fails (its source is too large) keeps no version.
	failed := suite("versioned", "a", "b")
	failed.Cases[0].Source, failed.Cases[0].SourceHash = "src a\nthird", "h-a3"
	failed.Source = &duet.SuiteSource{Name: "big.yaml", Source: strings.Repeat("#", duet.MaxSuiteSourceBytes+1)}
	_, err = s.ApplySuite(ctx(t), "alice", failed)
	wantCode(t, err, duet.CodeTooLarge)
	wantVersions("a", duet.SavedByApply, duet.SavedByApply)

	// Archiving a case gives it no new version; applying it again does.
	onlyA := suite("versioned", "a")
	onlyA.Cases[0].Source, onlyA.Cases[0].SourceHash = "src a\nsecond", "h-a2"
	if r := mustApply(t, s, "alice", onlyA); len(r.Cases) != 2 || r.Cases[1].Action != duet.ApplyArchived {
		t.Fatalf("b was not archived: %+v", r.Cases)
	}
	wantVersions("b", duet.SavedByApply, duet.SavedByRecorder)
	recorded.Via = ""
	mustApply(t, s, "alice", recorded)
	wantVersions("b", duet.SavedByApply, duet.SavedByRecorder, duet.SavedByApply)

	// A draft's saves are versions too; a refused one keeps none; the
	// owner's apply of its key makes the next version.
	d := &duet.Case{TaskID: res.Task.ID, Key: "gen", Title: "generated", Source: "draft 1", SourceHash: "d1", CreatedBy: "bob", Steps: []duet.Step{step(0, "true")}}
	if err := s.SaveDraftCase(ctx(t), d); err != nil {
		t.Fatal(err)
	}
	ids["gen"] = d.ID
	d2 := *d
	d2.Source, d2.SourceHash = "draft 2", "d2"
	if err := s.SaveDraftCase(ctx(t), &d2); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.SaveDraftCase(ctx(t), &duet.Case{TaskID: res.Task.ID, Key: "gen", Title: "t", Source: "carol's", CreatedBy: "carol"}), duet.CodeConflict)
	got := wantVersions("gen", duet.SavedAsDraft, duet.SavedAsDraft)
	if got[0].SavedBy != "bob" {
		t.Fatalf("the draft's version was saved by %q", got[0].SavedBy)
	}
	if v, err := s.FindCaseVersion(ctx(t), d.ID, 2); err != nil || v.Source != "draft 2" {
		t.Fatalf("the draft's version 2: %+v %v", v, err)
	}
	withGen := suite("versioned", "a", "b", "gen")
	withGen.Cases[0].Source, withGen.Cases[0].SourceHash = "src a\nsecond", "h-a2"
	withGen.Cases[1].Source, withGen.Cases[1].SourceHash = "src b\nrecorded", "h-b2"
	mustApply(t, s, "alice", withGen)
	got = wantVersions("gen", duet.SavedAsDraft, duet.SavedAsDraft, duet.SavedByApply)
	if got[0].SavedBy != "alice" || got[0].Title != "title gen" {
		t.Fatalf("the applied version of the draft: %+v", got[0])
	}

	// Page by page, newest first.
	page, more, err := s.FindCaseVersions(ctx(t), d.ID, 0, 2)
	if err != nil || !more || len(page) != 2 || page[0].Version != 3 || page[1].Version != 2 {
		t.Fatalf("the first page: %v %v %v", page, more, err)
	}
	page, more, err = s.FindCaseVersions(ctx(t), d.ID, page[1].Version, 2)
	if err != nil || more || len(page) != 1 || page[0].Version != 1 {
		t.Fatalf("the second page: %v %v %v", page, more, err)
	}

	_, err = s.FindCaseVersion(ctx(t), ids["a"], 9)
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.FindCaseVersion(ctx(t), "case_none", 1)
	wantCode(t, err, duet.CodeNotFound)
	if none, more, err := s.FindCaseVersions(ctx(t), "case_none", 0, 0); err != nil || more || len(none) != 0 {
		t.Fatalf("versions of no case: %v %v %v", none, more, err)
	}
}
