package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testFreshAcrossHandles: the reads every governed call repeats (a token by
// hash, a task as its viewer sees it, its case count, its latest run) see
// a change made through another handle — another process, another
// instance — at the next read, however often they were read before: a
// revoked token, an unshared task, a member removed from a team, a case
// added, a run started. An engine that caches these reads must invalidate
// them at once (internal/sqlite's cache_epoch); one that does not cache
// passes as it is. Values handed out are the caller's: changing one does
// not change the next read.
func testFreshAcrossHandles(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	c := ctx(t)
	warm := func(read func() error) {
		t.Helper()
		for range 3 {
			if err := read(); err != nil {
				t.Fatalf("before the change: %v", err)
			}
		}
	}
	wantCode := func(what string, err error, code duet.Code) {
		t.Helper()
		if duet.ErrorCode(err) != code {
			t.Fatalf("%s after the change: got %v, want %s", what, err, code)
		}
	}

	// A revoked token.
	tok := &duet.Token{UserID: "alice", Name: "ci", Hash: "hash-" + duet.NewID("h")}
	if err := a.CreateToken(c, tok); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTokenByHash(c, tok.Hash); return err })
	if err := b.DeleteToken(c, "alice", tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err := a.FindTokenByHash(c, tok.Hash)
	wantCode("a revoked token", err, duet.CodeUnauthenticated)

	// An unshared task.
	res := mustApply(t, a, "alice", suite("fresh", "a", "b"))
	task := res.Task.ID
	if err := a.ShareTask(c, "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTaskByID(c, "bob", task); return err })
	got, _ := a.FindTaskByID(c, "bob", task)
	got.SharedWith[0] = "mallory"
	got.Name = "changed by the caller"
	again, err := a.FindTaskByID(c, "bob", task)
	if err != nil || again.Name != "fresh" || len(again.SharedWith) != 1 || again.SharedWith[0] != "bob" {
		t.Fatalf("a value handed out was changed in the store's hands: got %+v, %v", again, err)
	}
	if err := b.UnshareTask(c, "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	_, err = a.FindTaskByID(c, "bob", task)
	wantCode("an unshared task", err, duet.CodeNotFound)

	// In one read scope, a write through the same handle takes effect
	// for the reads after it.
	sc := duet.WithReadScope(c)
	if err := a.ShareTask(c, "alice", task, "dave"); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTaskByID(sc, "dave", task); return err })
	if err := a.UnshareTask(sc, "alice", task, "dave"); err != nil {
		t.Fatal(err)
	}
	_, err = a.FindTaskByID(sc, "dave", task)
	wantCode("a task unshared in the same read scope", err, duet.CodeNotFound)

	// A member removed from a team the task is shared with.
	if _, err := a.CreateTeam(c, "alice", "fresh-qa"); err != nil {
		t.Fatal(err)
	}
	if err := a.AddTeamMember(c, "alice", "fresh-qa", "carol"); err != nil {
		t.Fatal(err)
	}
	if err := a.ShareTask(c, "alice", task, "team:fresh-qa"); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTaskByID(c, "carol", task); return err })
	if err := b.RemoveTeamMember(c, "alice", "fresh-qa", "carol"); err != nil {
		t.Fatal(err)
	}
	_, err = a.FindTaskByID(c, "carol", task)
	wantCode("a member removed from the team", err, duet.CodeNotFound)

	// A case added; a run started.
	warm(func() error { _, err := a.CountCases(c, task); return err })
	lastRun := func() []*duet.Run {
		runs, _, err := a.FindRuns(c, duet.RunFilter{Viewer: "alice", TaskID: task, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	for range 3 {
		if n := len(lastRun()); n != 0 {
			t.Fatalf("got %d runs, want none", n)
		}
	}
	mustApply(t, b, "alice", suite("fresh", "a", "b", "c"))
	if n, err := a.CountCases(c, task); err != nil || n != 3 {
		t.Fatalf("the case count after a case was added: got %d, %v, want 3", n, err)
	}
	cases, _, _, err := b.FindCases(c, duet.CaseFilter{TaskID: task})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: task, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for _, cs := range cases {
		execs = append(execs, &duet.Execution{CaseID: cs.ID, CaseKey: cs.Key, CaseTitle: cs.Title, CaseVersion: cs.Version, Steps: cs.Steps})
	}
	if _, _, err := b.CreateRun(c, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	runs := lastRun()
	if len(runs) != 1 || runs[0].ID != run.ID || runs[0].Totals.Cases != 3 {
		t.Fatalf("the latest run after a run was started: got %+v, want %s with 3 cases", runs, run.ID)
	}
	runs[0].ErrorMessage = "changed by the caller"
	if again := lastRun(); again[0].ErrorMessage != "" {
		t.Fatalf("a run handed out was changed in the store's hands: %q", again[0].ErrorMessage)
	}

	// A task's overview (get_test_task): a schedule added, a contract
	// alert saved, a schedule removed.
	overview := func() *duet.TaskOverview {
		t.Helper()
		o, err := a.FindTaskOverview(c, "alice", task)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	warm(func() error { _, err := a.FindTaskOverview(c, "alice", task); return err })
	if o := overview(); len(o.Schedules) != 0 || len(o.Alerts) != 0 {
		t.Fatalf("before the change: schedules %+v, alerts %+v, want none", o.Schedules, o.Alerts)
	}
	sched := &duet.Schedule{TaskID: task, Owner: "alice", Name: "fresh-nightly", Source: duet.ScheduleFromUser, Cron: "0 2 * * *", TimeZone: "UTC",
		Missed: duet.MissedSkip, Overlap: duet.OverlapSkip, NextFireAt: time.Date(2030, 1, 2, 2, 0, 0, 0, time.UTC), Tags: []string{"smoke"}}
	if err := b.CreateSchedule(c, sched); err != nil {
		t.Fatal(err)
	}
	if o := overview(); len(o.Schedules) != 1 || o.Schedules[0].ID != sched.ID {
		t.Fatalf("the overview after a schedule was added: got %+v, want %s", o.Schedules, sched.ID)
	}
	warm(func() error { _, err := a.FindTaskOverview(c, "alice", task); return err })
	alert := &duet.ContractAlert{TaskID: task, CaseID: cases[0].ID, CaseKey: cases[0].Key, CaseTitle: cases[0].Title, CaseVersion: cases[0].Version,
		ServerKey: "mcp_fresh_0badcafe", Tool: "query_order", Broken: true, Problems: []string{"the field id is gone"}, DetectedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := b.SaveContractAlerts(c, []*duet.ContractAlert{alert}); err != nil {
		t.Fatal(err)
	}
	o := overview()
	if len(o.Alerts) != 1 || o.Alerts[0].Tool != "query_order" || len(o.Alerts[0].Problems) != 1 {
		t.Fatalf("the overview after a contract alert was saved: got %+v, want one on query_order", o.Alerts)
	}
	o.Alerts[0].Problems[0], o.Alerts[0].Tool = "changed by the caller", "changed"
	o.Schedules[0].Tags[0], o.Schedules[0].Name = "changed", "changed by the caller"
	if again := overview(); again.Alerts[0].Problems[0] != "the field id is gone" || again.Alerts[0].Tool != "query_order" ||
		again.Schedules[0].Tags[0] != "smoke" || again.Schedules[0].Name != "fresh-nightly" {
		t.Fatalf("an overview handed out was changed in the store's hands: %+v %+v", again.Alerts[0], again.Schedules[0])
	}
	if err := b.DeleteSchedule(c, "alice", sched.ID); err != nil {
		t.Fatal(err)
	}
	if o := overview(); len(o.Schedules) != 0 {
		t.Fatalf("the overview after the schedule was removed: got %+v, want none", o.Schedules)
	}
}

// testRegistryFreshAcrossHandles: the registry lookup every invoke()
// repeats (an executor's registration of a serverKey and the archived
// tool) sees a change made through another handle at the next read,
// however often it was read before: a re-synced catalog (a tool changed, a
// tool dropped), a registration replaced with a new address and a new
// credential, a credential rotated in place, a registration removed. An
// engine that caches the lookup must invalidate it at once
// (internal/sqlite's cache_epoch, migration 00015); one that does not cache
// passes as it is. Values handed out are the caller's.
func testRegistryFreshAcrossHandles(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	c := ctx(t)
	const key = "mcp_fresh_0badcafe"
	lookup := func(st duet.Store, cx context.Context, tool string) (*duet.MCPServer, *duet.MCPTool) {
		t.Helper()
		s, tl, err := st.FindMCPServerTool(cx, "alice", key, tool)
		if err != nil {
			t.Fatalf("FindMCPServerTool(%s): %v", tool, err)
		}
		return s, tl
	}
	warm := func(tool string) {
		t.Helper()
		for range 3 {
			lookup(a, c, tool)
		}
	}
	tool := func(desc, schema string) *duet.MCPTool {
		return &duet.MCPTool{Name: "query_order", Description: desc, InputSchema: json.RawMessage(schema),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	}
	catalog := func(hash string, tools ...*duet.MCPTool) *duet.MCPCatalog {
		return &duet.MCPCatalog{Transport: duet.TransportStreamableHTTP, ProtocolVersion: "2025-11-25", ServerName: "orders",
			Hash: hash, SyncedAt: time.Now().UTC().Truncate(time.Second), Tools: tools}
	}

	reg, cred := registration("alice", "fresh-orders", key, true)
	if err := a.CreateMCPServer(c, reg, cred); err != nil {
		t.Fatal(err)
	}
	// Registered with an empty catalog; then synced through the other
	// handle: the tool appears.
	warm("query_order")
	if _, tl := lookup(a, c, "query_order"); tl != nil {
		t.Fatalf("before the first sync: got tool %+v, want none", tl)
	}
	if err := b.SaveMCPCatalog(c, reg.ID, catalog("h1", tool("v1", `{"type":"object"}`))); err != nil {
		t.Fatal(err)
	}
	s, tl := lookup(a, c, "query_order")
	if tl == nil || tl.Description != "v1" || s.CatalogHash != "h1" || s.ToolCount != 1 {
		t.Fatalf("after a sync through another handle: got %+v, %+v, want tool v1 and hash h1", s, tl)
	}

	// Values handed out are the caller's.
	warm("query_order")
	s, tl = lookup(a, c, "query_order")
	s.HeaderNames[0], s.URL, s.CredentialRef = "X-Changed", "https://changed.example/", "cred_changed"
	tl.InputSchema[0], tl.Annotations[0], tl.Description = 'X', 'X', "changed by the caller"
	s, tl = lookup(a, c, "query_order")
	if s.HeaderNames[0] != "X-Api-Key" || s.URL != reg.URL || s.CredentialRef != reg.CredentialRef ||
		string(tl.InputSchema) != `{"type":"object"}` || string(tl.Annotations) != `{"readOnlyHint":true}` || tl.Description != "v1" {
		t.Fatalf("a value handed out was changed in the store's hands: got %+v, %+v", s, tl)
	}

	// Re-synced through the other handle: the tool changed, then dropped.
	warm("query_order")
	if err := b.SaveMCPCatalog(c, reg.ID, catalog("h2", tool("v2", `{"type":"object","properties":{"id":{"type":"string"}}}`))); err != nil {
		t.Fatal(err)
	}
	s, tl = lookup(a, c, "query_order")
	if tl == nil || tl.Description != "v2" || string(tl.InputSchema) != `{"type":"object","properties":{"id":{"type":"string"}}}` || s.CatalogHash != "h2" {
		t.Fatalf("after a re-sync that changed the tool: got %+v, %+v, want v2", s, tl)
	}
	warm("query_order")
	if err := b.SaveMCPCatalog(c, reg.ID, catalog("h3", &duet.MCPTool{Name: "other", InputSchema: json.RawMessage(`{"type":"object"}`)})); err != nil {
		t.Fatal(err)
	}
	if s, tl = lookup(a, c, "query_order"); tl != nil || s.CatalogHash != "h3" {
		t.Fatalf("after a re-sync that dropped the tool: got %+v, %+v, want no tool", s, tl)
	}

	// In one read scope, a sync through the same handle takes effect for
	// the reads after it.
	sc := duet.WithReadScope(c)
	for range 3 {
		lookup(a, sc, "query_order")
	}
	if err := a.SaveMCPCatalog(sc, reg.ID, catalog("h4", tool("v4", `{"type":"object"}`))); err != nil {
		t.Fatal(err)
	}
	if _, tl = lookup(a, sc, "query_order"); tl == nil || tl.Description != "v4" {
		t.Fatalf("after a sync in the same read scope: got %+v, want v4", tl)
	}

	// A credential rotated in place (a renewed OAuth token, a rewrap): the
	// next read of it, through the first handle, sees the new ciphertext.
	old, err := a.FindCredential(c, reg.CredentialRef)
	if err != nil {
		t.Fatal(err)
	}
	old.Ciphertext = []byte("sealed-again")
	if err := b.UpdateCredentials(c, []*duet.Credential{old}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.FindCredential(c, reg.CredentialRef); err != nil || string(got.Ciphertext) != "sealed-again" || got.Version != old.Version {
		t.Fatalf("a rotated credential: got %+v, %v, want the new ciphertext at version %d", got, err, old.Version)
	}

	// Replaced through the other handle: a new address, a new credential,
	// no archived catalog.
	warm("query_order")
	next, nextCred := registration("alice", "fresh-orders", key, true)
	next.ID, next.URL = reg.ID, "https://fresh-orders-2.example/mcp"
	if err := b.ReplaceMCPServer(c, next, nextCred); err != nil {
		t.Fatal(err)
	}
	s, tl = lookup(a, c, "query_order")
	if s.URL != next.URL || s.CredentialRef != nextCred.Ref || !s.UpdatedAt.Equal(next.UpdatedAt) || s.SyncedAt != nil || tl != nil {
		t.Fatalf("after a replace through another handle: got %+v, %+v, want %s with credential %s and no catalog", s, tl, next.URL, nextCred.Ref)
	}
	if _, err := a.FindCredential(c, reg.CredentialRef); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("the replaced credential: got %v, want NOT_FOUND", err)
	}

	// Removed through the other handle.
	warm("query_order")
	if err := b.DeleteMCPServer(c, "alice", key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.FindMCPServerTool(c, "alice", key, "query_order"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("a removed registration: got %v, want NOT_FOUND", err)
	}
	if _, err := a.FindCredential(c, nextCred.Ref); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("a removed registration's credential: got %v, want NOT_FOUND", err)
	}
	// Nobody else's registration answers for alice's lookup, and hers
	// never for another executor.
	bobs, _ := registration("bob", "fresh-orders", key, false)
	if err := b.CreateMCPServer(c, bobs, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if s, _, err := a.FindMCPServerTool(c, "bob", key, "query_order"); err != nil || s.Owner != "bob" {
			t.Fatalf("bob's lookup: got %+v, %v", s, err)
		}
	}
	if _, _, err := a.FindMCPServerTool(c, "alice", key, "query_order"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("alice's lookup after bob registered the address: got %v, want NOT_FOUND", err)
	}
}
