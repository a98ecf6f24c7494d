package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testAuditWithTheChange: every write a governed call makes — starts,
// cancellations, stop requests and their decisions, approvals, shares,
// transfers, tokens, registrations, suites — stores the call's audit record
// (duet.AuditIntent in its context) in its own transaction: the record is
// there as soon as the change is, with no writer to flush it. A change
// refused (nothing stored) leaves the record to the caller, and so does a
// read; a second change of the same call does not write it again; the
// completion stores the call's final outcome in the record.
func testAuditWithTheChange(t *testing.T, s duet.Store) {
	run, _ := newRun(t, s, "alice")
	task := run.TaskID
	cases, _, _, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: task})
	if err != nil {
		t.Fatal(err)
	}
	queued, _ := newRun(t, s, "alice")
	now := time.Now()
	stop := &duet.StopRequest{RunID: run.ID, TaskID: task, Executor: "alice", RequestedBy: "bob", Status: duet.StopPending, ExpiresAt: now.Add(time.Hour)}
	srv, cred := registration("alice", "audited", "mcp_audited_0badcafe", true)
	changes := []struct {
		name   string
		change func(ctx context.Context) error
	}{
		{"start", func(ctx context.Context) error {
			r := &duet.Run{TaskID: task, TriggeredBy: "alice", CallSource: duet.SourceMCP}
			_, _, err := s.CreateRun(ctx, duet.StartRunParams{Run: r, Executions: []*duet.Execution{{CaseID: cases[0].ID, CaseKey: cases[0].Key, CaseTitle: cases[0].Title, CaseVersion: cases[0].Version, Steps: cases[0].Steps}}})
			return err
		}},
		{"cancel", func(ctx context.Context) error { _, err := s.RequestCancel(ctx, "alice", queued.ID); return err }},
		{"stop request", func(ctx context.Context) error { return s.CreateStopRequest(ctx, stop) }},
		{"stop decision", func(ctx context.Context) error {
			_, err := s.DecideStopRequest(ctx, stop.ID, "alice", duet.StopViaCLI, false)
			return err
		}},
		{"share", func(ctx context.Context) error { return s.ShareTask(ctx, "alice", task, "bob") }},
		{"approval", func(ctx context.Context) error {
			return s.ApproveCase(ctx, &duet.CaseApproval{User: "bob", CaseID: cases[0].ID, Version: cases[0].Version})
		}},
		{"unshare", func(ctx context.Context) error { return s.UnshareTask(ctx, "alice", task, "bob") }},
		{"token", func(ctx context.Context) error {
			return s.CreateToken(ctx, &duet.Token{UserID: "alice", Name: "audited", Hash: "audited-" + duet.NewID("h")})
		}},
		{"registration", func(ctx context.Context) error { return s.CreateMCPServer(ctx, srv, cred) }},
		{"team", func(ctx context.Context) error { _, err := s.CreateTeam(ctx, "alice", "audited"); return err }},
		{"transfer", func(ctx context.Context) error { _, err := s.TransferTask(ctx, "alice", task, "carol"); return err }},
		{"apply", func(ctx context.Context) error {
			_, err := s.ApplySuite(ctx, "carol", suite("audited-"+duet.NewID("x"), "a"))
			return err
		}},
	}
	for i, c := range changes {
		trace := duet.NewTraceID()
		in := duet.NewAuditIntent(duet.AuditRecord{Time: time.Now(), TraceID: trace, CallSource: duet.SourceMCP, Caller: "alice", Method: "change", Tool: c.name, ArgBytes: i})
		if err := c.change(duet.WithAuditIntent(ctx(t), in)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if in.Pending() {
			t.Fatalf("%s: the change did not write the call's audit record", c.name)
		}
		got, err := s.FindAudit(ctx(t), duet.AuditFilter{TraceID: trace})
		if err != nil || len(got) != 1 || got[0].Tool != c.name || got[0].Outcome != duet.OutcomeOK || got[0].ArgBytes != i {
			t.Fatalf("%s: the audit record stored with the change: %+v %v", c.name, got, err)
		}
		id := in.Close()
		if id != got[0].ID {
			t.Fatalf("%s: Close returned %d, the record is %d", c.name, id, got[0].ID)
		}
		// The call ends: its final outcome and sizes complete the record.
		final := *got[0]
		final.Outcome, final.DurationUs, final.ResultBytes, final.Caller = duet.CodeTooLarge, 1234, 99, "alice-as-learned"
		if err := s.CompleteAudit(ctx(t), []*duet.AuditRecord{&final}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.FindAudit(ctx(t), duet.AuditFilter{TraceID: trace}); len(got) != 1 || got[0].Outcome != duet.CodeTooLarge || got[0].DurationUs != 1234 || got[0].ResultBytes != 99 || got[0].Caller != "alice-as-learned" {
			t.Fatalf("%s: completed: %+v", c.name, got)
		}
	}

	// One record per call, whatever number of changes it makes.
	trace := duet.NewTraceID()
	in := duet.NewAuditIntent(duet.AuditRecord{Time: time.Now(), TraceID: trace, CallSource: duet.SourceCLI, Caller: "alice", Method: "two changes"})
	actx := duet.WithAuditIntent(ctx(t), in)
	for _, h := range []string{"first", "second"} {
		if err := s.CreateToken(actx, &duet.Token{UserID: "alice", Hash: h + duet.NewID("h")}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.FindAudit(ctx(t), duet.AuditFilter{TraceID: trace}); len(got) != 1 || in.Close() != got[0].ID {
		t.Fatalf("two changes of one call: %d records", len(got))
	}

	// A refused change and a read store nothing: the record is the caller's.
	trace = duet.NewTraceID()
	in = duet.NewAuditIntent(duet.AuditRecord{Time: time.Now(), TraceID: trace, CallSource: duet.SourceMCP, Caller: "mallory", Method: "refused"})
	actx = duet.WithAuditIntent(ctx(t), in)
	wantCode(t, s.ShareTask(actx, "mallory", task, "bob"), duet.CodeNotFound)
	if _, err := s.FindTaskByID(actx, "carol", task); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindAudit(actx, duet.AuditFilter{}); err != nil {
		t.Fatal(err)
	}
	if !in.Pending() || in.Close() != 0 {
		t.Fatal("a refused change or a read wrote the call's audit record")
	}
	if got, _ := s.FindAudit(ctx(t), duet.AuditFilter{TraceID: trace}); len(got) != 0 {
		t.Fatalf("a refused change stored %d audit records", len(got))
	}
	// After the call, nothing takes the record any more.
	if err := s.CreateToken(actx, &duet.Token{UserID: "alice", Hash: "late" + duet.NewID("h")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FindAudit(ctx(t), duet.AuditFilter{TraceID: trace}); len(got) != 0 {
		t.Fatalf("a change after the call ended stored %d audit records", len(got))
	}
}
