package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

// AssetStore is a store that also keeps AI assets and generation records.
type AssetStore interface {
	duet.Store
	duet.AssetStore
	duet.GenerationStore
}

// AssetOpener returns a new, empty store; it registers its own cleanup.
type AssetOpener func(t *testing.T) AssetStore

// RunAssets runs the asset and generation suite against stores made by open.
func RunAssets(t *testing.T, open AssetOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, AssetStore)
	}{
		{"AssetVersions", testAssetVersions},
		{"AssetSharing", testAssetSharing},
		{"TeamAssets", testTeamAssets},
		{"AssetListBranches", testAssetListBranches},
		{"AssetValidation", testAssetValidation},
		{"AssetDelete", testAssetDelete},
		{"Generations", testGenerations},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

func saveAsset(t *testing.T, s AssetStore, a *duet.Asset, want duet.ApplyAction) *duet.Asset {
	t.Helper()
	got, err := s.SaveAsset(ctx(t), a)
	if err != nil {
		t.Fatalf("SaveAsset(%s %s): %v", a.Kind, a.Name, err)
	}
	if got != want {
		t.Fatalf("SaveAsset(%s %s): got action %q, want %q", a.Kind, a.Name, got, want)
	}
	return a
}

func testAssetVersions(t *testing.T, s AssetStore) {
	a := saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "checkout", Owner: "alice", Description: "d1", Body: "v1 body"}, duet.ApplyCreated)
	if a.ID == "" || a.Version != 1 || a.Visibility != duet.VisibilityPrivate || len(a.SharedWith) != 0 || a.CreatedAt.IsZero() {
		t.Fatalf("created: got %+v", a)
	}
	// The same content again changes nothing.
	same := saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "checkout", Owner: "alice", Description: "d1", Body: "v1 body"}, duet.ApplyUnchanged)
	if same.Version != 1 || same.ID != a.ID {
		t.Fatalf("unchanged: got version %d id %s, want 1 %s", same.Version, same.ID, a.ID)
	}
	v2 := saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "checkout", Owner: "alice", Description: "d2", Body: "v2 body"}, duet.ApplyUpdated)
	if v2.Version != 2 || v2.ID != a.ID || v2.Body != "v2 body" {
		t.Fatalf("v2: got %+v", v2)
	}
	// The same name under another kind is another asset.
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetRule, Name: "checkout", Owner: "alice", Body: "a rule"}, duet.ApplyCreated)

	latest, err := s.FindAsset(ctx(t), "alice", duet.AssetSkill, "checkout", 0)
	if err != nil {
		t.Fatal(err)
	}
	if latest.Version != 2 || latest.Body != "v2 body" || latest.Description != "d2" {
		t.Fatalf("latest: got %+v", latest)
	}
	old, err := s.FindAsset(ctx(t), "alice", duet.AssetSkill, "alice/checkout", 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Version != 1 || old.Body != "v1 body" || old.Description != "d1" {
		t.Fatalf("version 1: got %+v", old)
	}
	_, err = s.FindAsset(ctx(t), "alice", duet.AssetSkill, "checkout", 3)
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.FindAsset(ctx(t), "alice", duet.AssetPrompt, "checkout", 0)
	wantCode(t, err, duet.CodeNotFound)

	list, err := s.FindAssets(ctx(t), duet.AssetFilter{Viewer: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range list {
		got = append(got, string(a.Kind)+":"+a.Name+"@"+itoa(a.Version))
	}
	if diff := cmp.Diff([]string{"rule:checkout@1", "skill:checkout@2"}, got); diff != "" {
		t.Fatalf("FindAssets (-want +got):\n%s", diff)
	}
	skills, _ := s.FindAssets(ctx(t), duet.AssetFilter{Viewer: "alice", Kind: duet.AssetSkill})
	if len(skills) != 1 || skills[0].Kind != duet.AssetSkill {
		t.Fatalf("kind filter: got %+v", skills)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func testAssetSharing(t *testing.T, s AssetStore) {
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "login", Owner: "alice", Body: "alice's login", SharedWith: []string{"bob", "bob", "alice"}}, duet.ApplyCreated)
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "search", Owner: "carol", Body: "carol's search", SharedWith: []string{duet.Everyone}}, duet.ApplyCreated)
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "secret", Owner: "carol", Body: "private"}, duet.ApplyCreated)

	a, err := s.FindAsset(ctx(t), "bob", duet.AssetSkill, "login", 0)
	if err != nil {
		t.Fatalf("bob reads alice's shared skill: %v", err)
	}
	if a.Owner != "alice" || a.Visibility != duet.VisibilityShared || !slices.Equal(a.SharedWith, []string{"bob"}) {
		t.Fatalf("shared: got %+v", a)
	}
	if !a.VisibleTo("bob") || a.VisibleTo("dave") {
		t.Fatal("VisibleTo disagrees with the store")
	}
	if _, err := s.FindAsset(ctx(t), "dave", duet.AssetSkill, "search", 0); err != nil {
		t.Fatalf("shared with everyone: %v", err)
	}
	for _, viewer := range []string{"bob", "dave"} {
		_, err := s.FindAsset(ctx(t), viewer, duet.AssetSkill, "carol/secret", 0)
		wantCode(t, err, duet.CodeNotFound)
	}
	_, err = s.FindAsset(ctx(t), "dave", duet.AssetSkill, "login", 0)
	wantCode(t, err, duet.CodeNotFound)

	// Bob's own asset of the same name wins over the shared one.
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "login", Owner: "bob", Body: "bob's login"}, duet.ApplyCreated)
	own, err := s.FindAsset(ctx(t), "bob", duet.AssetSkill, "login", 0)
	if err != nil || own.Owner != "bob" {
		t.Fatalf("own first: got %+v, %v", own, err)
	}
	if other, err := s.FindAsset(ctx(t), "bob", duet.AssetSkill, "alice/login", 0); err != nil || other.Owner != "alice" {
		t.Fatalf("owner/name: got %+v, %v", other, err)
	}
	// Two shared assets of one name, none of the viewer's: ambiguous.
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "login", Owner: "carol", Body: "carol's login", SharedWith: []string{"dave"}}, duet.ApplyCreated)
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "login", Owner: "alice", Body: "alice's login", SharedWith: []string{"bob", "dave"}}, duet.ApplyUpdated)
	_, err = s.FindAsset(ctx(t), "dave", duet.AssetSkill, "login", 0)
	wantCode(t, err, duet.CodeInvalidArgument)
	if err != nil && !strings.Contains(duet.ErrorMessage(err), "alice/login") {
		t.Fatalf("ambiguity message: got %q, want it to name alice/login", duet.ErrorMessage(err))
	}

	list, err := s.FindAssets(ctx(t), duet.AssetFilter{Viewer: "dave"})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, a := range list {
		refs = append(refs, a.Ref())
	}
	if diff := cmp.Diff([]string{"alice/login", "carol/login", "carol/search"}, refs); diff != "" {
		t.Fatalf("dave's assets (-want +got):\n%s", diff)
	}
	mine, _ := s.FindAssets(ctx(t), duet.AssetFilter{Viewer: "dave", Owner: "carol"})
	if len(mine) != 2 {
		t.Fatalf("owner filter: got %d, want 2", len(mine))
	}

	// Nil SharedWith keeps the sharing; an empty one makes the asset private.
	kept := saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "search", Owner: "carol", Body: "carol's search v2"}, duet.ApplyUpdated)
	if !slices.Equal(kept.SharedWith, []string{duet.Everyone}) || kept.Version != 2 {
		t.Fatalf("nil SharedWith: got %+v", kept)
	}
	priv := saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "search", Owner: "carol", Body: "carol's search v2", SharedWith: []string{}}, duet.ApplyUpdated)
	if priv.Visibility != duet.VisibilityPrivate || priv.Version != 2 {
		t.Fatalf("made private: got %+v", priv)
	}
	_, err = s.FindAsset(ctx(t), "dave", duet.AssetSkill, "search", 0)
	wantCode(t, err, duet.CodeNotFound)
}

func testAssetValidation(t *testing.T, s AssetStore) {
	tests := []struct {
		name string
		a    duet.Asset
		want duet.Code
	}{
		{"no owner", duet.Asset{Kind: duet.AssetRule, Name: "r", Body: "x"}, duet.CodeInvalidArgument},
		{"bad kind", duet.Asset{Kind: duet.AssetMCPTool, Name: "r", Owner: "a", Body: "x"}, duet.CodeInvalidArgument},
		{"bad name", duet.Asset{Kind: duet.AssetRule, Name: "No Spaces", Owner: "a", Body: "x"}, duet.CodeInvalidArgument},
		{"empty body", duet.Asset{Kind: duet.AssetRule, Name: "r", Owner: "a", Body: "  \n"}, duet.CodeInvalidArgument},
		{"huge body", duet.Asset{Kind: duet.AssetRule, Name: "r", Owner: "a", Body: strings.Repeat("x", duet.MaxAssetBodyBytes+1)}, duet.CodeTooLarge},
		{"two-line description", duet.Asset{Kind: duet.AssetRule, Name: "r", Owner: "a", Body: "x", Description: "a\nb"}, duet.CodeInvalidArgument},
		{"bad share", duet.Asset{Kind: duet.AssetRule, Name: "r", Owner: "a", Body: "x", SharedWith: []string{"a b"}}, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		_, err := s.SaveAsset(ctx(t), &tt.a)
		if got := duet.ErrorCode(err); got != tt.want {
			t.Errorf("%s: got %q (%v), want %q", tt.name, got, err, tt.want)
		}
	}
	list, _ := s.FindAssets(ctx(t), duet.AssetFilter{Viewer: "a"})
	if len(list) != 0 {
		t.Fatalf("invalid assets were stored: %+v", list)
	}
}

func testAssetDelete(t *testing.T, s AssetStore) {
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetPrompt, Name: "smoke", Owner: "alice", Body: "p1", SharedWith: []string{"bob"}}, duet.ApplyCreated)
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetPrompt, Name: "smoke", Owner: "alice", Body: "p2"}, duet.ApplyUpdated)
	wantCode(t, s.DeleteAsset(ctx(t), "bob", duet.AssetPrompt, "smoke"), duet.CodeNotFound)
	if err := s.DeleteAsset(ctx(t), "alice", duet.AssetPrompt, "smoke"); err != nil {
		t.Fatal(err)
	}
	_, err := s.FindAsset(ctx(t), "alice", duet.AssetPrompt, "smoke", 1)
	wantCode(t, err, duet.CodeNotFound)
	wantCode(t, s.DeleteAsset(ctx(t), "alice", duet.AssetPrompt, "smoke"), duet.CodeNotFound)
	// The name is free again, at version 1.
	again := saveAsset(t, s, &duet.Asset{Kind: duet.AssetPrompt, Name: "smoke", Owner: "alice", Body: "p3"}, duet.ApplyCreated)
	if again.Version != 1 || again.Visibility != duet.VisibilityPrivate {
		t.Fatalf("recreated: got %+v", again)
	}
}

func testGenerations(t *testing.T, s AssetStore) {
	wantCode(t, s.CreateGeneration(ctx(t), &duet.Generation{TaskID: "task_1", Outcome: duet.OutcomeOK}), duet.CodeInvalidArgument)
	first := &duet.Generation{TaskID: "task_1", User: "alice", Model: "m", Goal: "g", Assets: []string{"skill:alice/checkout@2"},
		Turns: 4, ToolCalls: 3, Repairs: 1, PromptTokens: 900, CompletionTokens: 120, TotalTokens: 1020, Attempts: 5,
		Outcome: duet.OutcomeOK, DurationMs: 1234, CaseID: "case_1", CaseVersion: 1, TraceID: "t1"}
	if err := s.CreateGeneration(ctx(t), first); err != nil {
		t.Fatal(err)
	}
	if first.ID == "" || first.CreatedAt.IsZero() {
		t.Fatalf("ID and CreatedAt not set: %+v", first)
	}
	second := &duet.Generation{TaskID: "task_2", User: "alice", Outcome: duet.CodeGenerationFailed, ErrorMessage: "no valid case after 3 repairs"}
	if err := s.CreateGeneration(ctx(t), second); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateGeneration(ctx(t), &duet.Generation{TaskID: "task_1", User: "bob", Outcome: duet.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindGenerations(ctx(t), duet.GenerationFilter{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != second.ID || got[1].ID != first.ID {
		t.Fatalf("alice's generations, newest first: got %+v", got)
	}
	want := *first
	want.CreatedAt = got[1].CreatedAt
	if diff := cmp.Diff(&want, got[1]); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	byTask, _ := s.FindGenerations(ctx(t), duet.GenerationFilter{User: "alice", TaskID: "task_2"})
	if len(byTask) != 1 || byTask[0].Outcome != duet.CodeGenerationFailed {
		t.Fatalf("task filter: got %+v", byTask)
	}
	_, err = s.FindGenerations(ctx(t), duet.GenerationFilter{})
	wantCode(t, err, duet.CodeInvalidArgument)
}

// testAssetListBranches lists the Asset Center of a viewer who sees assets
// every way at once — her own (one of them also shared with everyone and
// with her team), shared with her, with everyone, with her team, and by two
// of those at once: each visible asset exactly once, latest version, in
// kind, owner, name order, the filters and the limit applied to all.
func testAssetListBranches(t *testing.T, s AssetStore) {
	c := ctx(t)
	if _, err := s.CreateTeam(c, "bob", "qa"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTeamMember(c, "bob", "qa", "alice"); err != nil {
		t.Fatal(err)
	}
	team := duet.TeamPrincipal("qa")
	save := func(kind duet.AssetKind, owner, name string, shared ...string) {
		t.Helper()
		saveAsset(t, s, &duet.Asset{Kind: kind, Name: name, Owner: owner, Body: "v1", SharedWith: shared}, duet.ApplyCreated)
	}
	save(duet.AssetSkill, "alice", "mine-shared", duet.Everyone, team)
	save(duet.AssetRule, "alice", "mine-private")
	save(duet.AssetSkill, "bob", "to-alice", "alice")
	save(duet.AssetSkill, "carol", "to-everyone", duet.Everyone)
	save(duet.AssetPrompt, "dave", "to-team", team)
	save(duet.AssetSkill, "erin", "twice", "alice", team)
	save(duet.AssetSkill, "erin", "hidden")
	save(duet.AssetRule, "bob", "hidden", "carol")
	// A new version of her own shared asset: the list shows it once, latest.
	saveAsset(t, s, &duet.Asset{Kind: duet.AssetSkill, Name: "mine-shared", Owner: "alice", Body: "v2"}, duet.ApplyUpdated)

	refs := func(f duet.AssetFilter) []string {
		t.Helper()
		list, err := s.FindAssets(c, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range list {
			out = append(out, string(a.Kind)+" "+a.Ref()+" "+a.Body)
		}
		return out
	}
	all := []string{
		"prompt dave/to-team v1",
		"rule alice/mine-private v1",
		"skill alice/mine-shared v2",
		"skill bob/to-alice v1",
		"skill carol/to-everyone v1",
		"skill erin/twice v1",
	}
	for _, tc := range []struct {
		filter duet.AssetFilter
		want   []string
	}{
		{duet.AssetFilter{Viewer: "alice"}, all},
		{duet.AssetFilter{Viewer: "alice", Limit: 3}, all[:3]},
		{duet.AssetFilter{Viewer: "alice", Kind: duet.AssetSkill}, all[2:]},
		{duet.AssetFilter{Viewer: "alice", Owner: "alice"}, all[1:3]},
		{duet.AssetFilter{Viewer: "alice", Owner: "erin"}, all[5:]},
		{duet.AssetFilter{Viewer: "frank"}, []string{"skill alice/mine-shared v2", "skill carol/to-everyone v1"}},
	} {
		if diff := cmp.Diff(tc.want, refs(tc.filter)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.filter, diff)
		}
	}
}
