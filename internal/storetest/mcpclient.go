package storetest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

// MCPClientOpener returns a new, empty MCP client store; it registers its own
// cleanup.
type MCPClientOpener func(t *testing.T) duet.MCPClientStore

// RunMCPClient runs the MCP client store suite against stores made by open.
func RunMCPClient(t *testing.T, open MCPClientOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, duet.MCPClientStore)
	}{
		{"Registrations", testMCPRegistrations},
		{"Conflicts", testMCPConflicts},
		{"Replace", testMCPReplace},
		{"Catalog", testMCPCatalog},
		{"Credentials", testMCPCredentials},
		{"CredentialCompareAndSwap", testMCPCredentialCAS},
		{"CredentialLease", testMCPCredentialLease},
		{"Invocations", testMCPInvocations},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

func registration(owner, name, key string, cred bool) (*duet.MCPServer, *duet.Credential) {
	s := &duet.MCPServer{Owner: owner, Name: name, URL: "https://" + name + ".example/mcp", ServerKey: key}
	if !cred {
		return s, nil
	}
	s.CredentialRef = duet.NewID("cred")
	s.HeaderNames = []string{"X-Api-Key"}
	s.Auth = duet.AuthOAuth
	return s, &duet.Credential{Ref: s.CredentialRef, Owner: owner, ServerKey: key, Ciphertext: []byte("sealed-" + owner)}
}

func testMCPRegistrations(t *testing.T, st duet.MCPClientStore) {
	a, credA := registration("alice", "orders", "mcp_orders_0badcafe", true)
	if err := st.CreateMCPServer(ctx(t), a, credA); err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.CreatedAt.IsZero() {
		t.Fatalf("got %+v, want an id and times", a)
	}
	// bob registers the same address under another name, without credentials.
	b, _ := registration("bob", "order-service", "mcp_orders_0badcafe", false)
	if err := st.CreateMCPServer(ctx(t), b, nil); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"orders", "mcp_orders_0badcafe"} {
		got, err := st.FindMCPServer(ctx(t), "alice", ref)
		if err != nil {
			t.Fatalf("FindMCPServer(%s): %v", ref, err)
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("FindMCPServer(%s) (-want +got):\n%s", ref, diff)
		}
	}
	if _, err := st.FindMCPServer(ctx(t), "carol", "orders"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("carol: got %v, want NOT_FOUND", err)
	}
	list, err := st.FindMCPServers(ctx(t), "bob")
	if err != nil || len(list) != 1 || list[0].Name != "order-service" || list[0].CredentialRef != "" || list[0].HeaderNames != nil {
		t.Fatalf("bob's servers: got %+v, %v", list, err)
	}
	// Resolution is by the executor's own registration only.
	s, tool, err := st.FindMCPServerTool(ctx(t), "bob", "mcp_orders_0badcafe", "query_order")
	if err != nil || s.ID != b.ID || tool != nil {
		t.Fatalf("FindMCPServerTool(bob): got %+v %+v %v", s, tool, err)
	}
	if _, _, err := st.FindMCPServerTool(ctx(t), "carol", "mcp_orders_0badcafe", "query_order"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("FindMCPServerTool(carol): got %v, want NOT_FOUND", err)
	}
	if err := st.DeleteMCPServer(ctx(t), "alice", "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FindCredential(ctx(t), credA.Ref); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("credential after delete: got %v, want NOT_FOUND", err)
	}
	if err := st.DeleteMCPServer(ctx(t), "alice", "orders"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("second delete: got %v, want NOT_FOUND", err)
	}
	if _, err := st.FindMCPServer(ctx(t), "bob", "order-service"); err != nil {
		t.Errorf("bob's registration after alice's delete: %v", err)
	}
}

func testMCPConflicts(t *testing.T, st duet.MCPClientStore) {
	a, _ := registration("alice", "orders", "mcp_orders_0badcafe", false)
	if err := st.CreateMCPServer(ctx(t), a, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    *duet.MCPServer
		cred *duet.Credential
		want duet.Code
	}{
		{"same name", &duet.MCPServer{Owner: "alice", Name: "orders", URL: "https://x.example/", ServerKey: "mcp_x_00000001"}, nil, duet.CodeConflict},
		{"same key", &duet.MCPServer{Owner: "alice", Name: "other", URL: "https://orders.example/mcp", ServerKey: "mcp_orders_0badcafe"}, nil, duet.CodeConflict},
		{"no url", &duet.MCPServer{Owner: "alice", Name: "n", ServerKey: "mcp_n_00000001"}, nil, duet.CodeInvalidArgument},
		{"ref without credential", &duet.MCPServer{Owner: "alice", Name: "n", URL: "https://n.example/", ServerKey: "mcp_n_00000001", CredentialRef: "cred_1"}, nil, duet.CodeInvalidArgument},
		{"credential of another owner", &duet.MCPServer{Owner: "alice", Name: "n", URL: "https://n.example/", ServerKey: "mcp_n_00000001", CredentialRef: "cred_1"},
			&duet.Credential{Ref: "cred_1", Owner: "bob", ServerKey: "mcp_n_00000001", Ciphertext: []byte("x")}, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		if err := st.CreateMCPServer(ctx(t), tt.s, tt.cred); duet.ErrorCode(err) != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
	}
	// A failed create leaves no credential behind.
	s, cred := registration("alice", "orders", "mcp_orders_11111111", true)
	if err := st.CreateMCPServer(ctx(t), s, cred); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("got %v, want CONFLICT", err)
	}
	if _, err := st.FindCredential(ctx(t), cred.Ref); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("credential of a failed create: got %v, want NOT_FOUND", err)
	}
}

func testMCPReplace(t *testing.T, st duet.MCPClientStore) {
	s, cred := registration("alice", "orders", "mcp_orders_0badcafe", true)
	if err := st.CreateMCPServer(ctx(t), s, cred); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveMCPCatalog(ctx(t), s.ID, &duet.MCPCatalog{Hash: "h", SyncedAt: time.Now(), Tools: []*duet.MCPTool{{Name: "a"}}}); err != nil {
		t.Fatal(err)
	}
	oldRef := s.CredentialRef
	s.URL, s.ServerKey = "https://orders2.example/mcp", "mcp_orders2_22222222"
	s.CredentialRef, s.HeaderNames, s.Auth = duet.NewID("cred"), []string{"X-Token"}, duet.AuthClientCredentials
	newCred := &duet.Credential{Ref: s.CredentialRef, Owner: "alice", ServerKey: s.ServerKey, Ciphertext: []byte("new")}
	if err := st.ReplaceMCPServer(ctx(t), s, newCred); err != nil {
		t.Fatal(err)
	}
	got, err := st.FindMCPServer(ctx(t), "alice", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got.ServerKey != s.ServerKey || got.SyncedAt != nil || got.ToolCount != 0 || got.CredentialRef != s.CredentialRef || got.Auth != duet.AuthClientCredentials {
		t.Errorf("after replace: got %+v", got)
	}
	if _, err := st.FindCredential(ctx(t), oldRef); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("old credential: got %v, want NOT_FOUND", err)
	}
	if tools, _ := st.FindMCPTools(ctx(t), s.ID); len(tools) != 0 {
		t.Errorf("tools after replace: got %d, want 0", len(tools))
	}
	s.ID, s.CredentialRef, s.HeaderNames = "srv_missing", "", nil
	if err := st.ReplaceMCPServer(ctx(t), s, nil); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("replace missing: got %v, want NOT_FOUND", err)
	}
}

func testMCPCatalog(t *testing.T, st duet.MCPClientStore) {
	s, _ := registration("alice", "orders", "mcp_orders_0badcafe", false)
	if err := st.CreateMCPServer(ctx(t), s, nil); err != nil {
		t.Fatal(err)
	}
	synced := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var tools []*duet.MCPTool
	for _, n := range []string{"query_order", "list_orders", "set_order_status"} {
		tools = append(tools, &duet.MCPTool{Name: n, Title: "T " + n, Description: "D " + n,
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)})
	}
	tools = append(tools, &duet.MCPTool{Name: "bare", InputSchema: json.RawMessage(`{"type":"object"}`)})
	cat := &duet.MCPCatalog{Transport: duet.TransportStreamableHTTP, ProtocolVersion: "2025-11-25", ServerName: "orders",
		ServerVersion: "1.0.0", Hash: "abc", SyncedAt: synced, Tools: tools}
	if err := st.SaveMCPCatalog(ctx(t), s.ID, cat); err != nil {
		t.Fatal(err)
	}
	got, err := st.FindMCPServer(ctx(t), "alice", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got.ToolCount != 4 || got.CatalogHash != "abc" || got.SyncedAt == nil || !got.SyncedAt.Equal(synced) ||
		got.Transport != duet.TransportStreamableHTTP || got.ProtocolVersion != "2025-11-25" || got.ServerName != "orders" {
		t.Errorf("after sync: got %+v", got)
	}
	list, err := st.FindMCPTools(ctx(t), s.ID)
	if err != nil || len(list) != 4 || list[0].Name != "bare" || list[0].OutputSchema != nil {
		t.Fatalf("tools: got %+v, %v", list, err)
	}
	_, tool, err := st.FindMCPServerTool(ctx(t), "alice", s.ServerKey, "query_order")
	if err != nil || tool == nil {
		t.Fatalf("FindMCPServerTool: %v %v", tool, err)
	}
	if diff := cmp.Diff(tools[0], tool); diff != "" {
		t.Errorf("tool (-want +got):\n%s", diff)
	}
	// A new sync replaces the archive.
	cat.Tools, cat.Hash = tools[:1], "def"
	if err := st.SaveMCPCatalog(ctx(t), s.ID, cat); err != nil {
		t.Fatal(err)
	}
	if list, _ := st.FindMCPTools(ctx(t), s.ID); len(list) != 1 {
		t.Errorf("after resync: got %d tools, want 1", len(list))
	}
	cat.Tools = []*duet.MCPTool{{Name: "x"}, {Name: "x"}}
	if err := st.SaveMCPCatalog(ctx(t), s.ID, cat); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("duplicate tool names: got %v, want INVALID_ARGUMENT", err)
	}
	if list, _ := st.FindMCPTools(ctx(t), s.ID); len(list) != 1 {
		t.Errorf("a failed sync must leave the archive: got %d tools, want 1", len(list))
	}
	if err := st.SaveMCPCatalog(ctx(t), "srv_missing", cat); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("missing server: got %v, want NOT_FOUND", err)
	}
}

func testMCPCredentials(t *testing.T, st duet.MCPClientStore) {
	var refs []string
	for _, owner := range []string{"alice", "bob"} {
		s, cred := registration(owner, "orders", "mcp_orders_0badcafe", true)
		if err := st.CreateMCPServer(ctx(t), s, cred); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, cred.Ref)
	}
	all, err := st.FindCredentials(ctx(t))
	if err != nil || len(all) != 2 {
		t.Fatalf("FindCredentials: got %d, %v", len(all), err)
	}
	for _, c := range all {
		if c.Version != 1 {
			t.Errorf("credential %s: got version %d, want 1 when created", c.Ref, c.Version)
		}
		c.Ciphertext = append([]byte("rewrapped-"), c.Ciphertext...)
	}
	if err := st.UpdateCredentials(ctx(t), all); err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		c, err := st.FindCredential(ctx(t), ref)
		if err != nil || !bytes.HasPrefix(c.Ciphertext, []byte("rewrapped-sealed-")) || c.ServerKey != "mcp_orders_0badcafe" || c.Version != 2 {
			t.Errorf("credential %s: got %+v, %v; want the new ciphertext at version 2", ref, c, err)
		}
	}
	if all[0].Version != 2 {
		t.Errorf("UpdateCredentials left Version %d, want 2", all[0].Version)
	}
	err = st.UpdateCredentials(ctx(t), []*duet.Credential{{Ref: refs[0], Ciphertext: []byte("a"), Version: 2}, {Ref: "cred_missing", Ciphertext: []byte("b"), Version: 1}})
	if duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("update with a missing ref: got %v, want NOT_FOUND", err)
	}
	if c, _ := st.FindCredential(ctx(t), refs[0]); !bytes.HasPrefix(c.Ciphertext, []byte("rewrapped-")) || c.Version != 2 {
		t.Errorf("a failed update must change nothing: got %q at version %d", c.Ciphertext, c.Version)
	}
	// A write from a stale read is refused, and changes nothing.
	err = st.UpdateCredentials(ctx(t), []*duet.Credential{{Ref: refs[1], Ciphertext: []byte("b"), Version: 2}, {Ref: refs[0], Ciphertext: []byte("stale"), Version: 1}})
	if duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("update from a stale read: got %v, want CONFLICT", err)
	}
	for _, ref := range refs {
		if c, _ := st.FindCredential(ctx(t), ref); !bytes.HasPrefix(c.Ciphertext, []byte("rewrapped-")) || c.Version != 2 {
			t.Errorf("credential %s after a refused update: got %q at version %d", ref, c.Ciphertext, c.Version)
		}
	}
}

// testMCPCredentialCAS: writers that read, change and write back the same
// credential concurrently, retrying on CONFLICT, lose no write.
func testMCPCredentialCAS(t *testing.T, st duet.MCPClientStore) {
	s, cred := registration("alice", "orders", "mcp_orders_0badcafe", true)
	cred.Ciphertext = []byte("0")
	if err := st.CreateMCPServer(ctx(t), s, cred); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					c, err := st.FindCredential(ctx(t), cred.Ref)
					if err != nil {
						errs <- err
						return
					}
					n, _ := strconv.Atoi(string(c.Ciphertext))
					c.Ciphertext = []byte(strconv.Itoa(n + 1))
					err = st.UpdateCredentials(ctx(t), []*duet.Credential{c})
					if err == nil {
						break
					}
					if duet.ErrorCode(err) != duet.CodeConflict && duet.ErrorCode(err) != duet.CodeUnavailable {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, err := st.FindCredential(ctx(t), cred.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(c.Ciphertext), strconv.Itoa(writers*each); got != want || c.Version != int64(1+writers*each) {
		t.Errorf("after %d increments: got %s at version %d, want %s at version %d", writers*each, got, c.Version, want, 1+writers*each)
	}
}

// testMCPCredentialLease: one holder at a time renews a credential; the
// lease is re-entrant for its holder, released, and taken over once it
// expires.
func testMCPCredentialLease(t *testing.T, st duet.MCPClientStore) {
	s, cred := registration("alice", "orders", "mcp_orders_0badcafe", true)
	if err := st.CreateMCPServer(ctx(t), s, cred); err != nil {
		t.Fatal(err)
	}
	got, err := st.LeaseCredential(ctx(t), cred.Ref, "p1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Ciphertext, cred.Ciphertext) || got.Version != 1 || got.Owner != "alice" {
		t.Errorf("leased credential: got %+v", got)
	}
	if _, err := st.LeaseCredential(ctx(t), cred.Ref, "p2", time.Minute); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("a second holder: got %v, want CONFLICT", err)
	}
	if _, err := st.LeaseCredential(ctx(t), cred.Ref, "p1", time.Minute); err != nil {
		t.Fatalf("the holder again: %v", err)
	}
	// A write does not need the lease, and the lease shows the new state.
	got.Ciphertext = []byte("renewed")
	if err := st.UpdateCredentials(ctx(t), []*duet.Credential{got}); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseCredential(ctx(t), cred.Ref, "p2"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.LeaseCredential(ctx(t), cred.Ref, "p2", time.Minute); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("a release by another holder must not end the lease: got %v, want CONFLICT", err)
	}
	if err := st.ReleaseCredential(ctx(t), cred.Ref, "p1"); err != nil {
		t.Fatal(err)
	}
	// p2 takes a short lease and stops answering: while it runs p3 is
	// refused, and once it has run out p3 takes over. Whether p3 asked
	// while it ran is known only afterwards (a loaded machine once took
	// longer than a 50 ms lease between the two calls): when it did not,
	// p2 takes it again, for twice as long.
	var taken time.Time // when p2 asked for its lease
	var ttl time.Duration
	for ttl = 200 * time.Millisecond; ; ttl *= 2 {
		taken = time.Now()
		got, err = st.LeaseCredential(ctx(t), cred.Ref, "p2", ttl)
		if err != nil || string(got.Ciphertext) != "renewed" || got.Version != 2 {
			t.Fatalf("after the release: got %+v, %v", got, err)
		}
		_, err = st.LeaseCredential(ctx(t), cred.Ref, "p3", time.Minute)
		if time.Since(taken) < ttl {
			if duet.ErrorCode(err) != duet.CodeConflict {
				t.Fatalf("while p2's lease runs: got %v, want CONFLICT", err)
			}
			break
		}
		// Too late to tell: p2's lease may have run out before p3 asked.
		switch {
		case err == nil:
			if err := st.ReleaseCredential(ctx(t), cred.Ref, "p3"); err != nil {
				t.Fatal(err)
			}
		case duet.ErrorCode(err) != duet.CodeConflict:
			t.Fatalf("p3 after p2's lease: %v", err)
		}
		if ttl > time.Minute {
			t.Fatalf("a lease of %s ran out before the next call", ttl)
		}
	}
	// p3 takes over once p2's lease has run out, not before: the store's
	// clock read p2's lease at or after taken.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		_, err := st.LeaseCredential(ctx(t), cred.Ref, "p3", time.Minute)
		if err == nil {
			if d := time.Since(taken); d < ttl {
				t.Fatalf("p3 took over %s after p2 took a lease of %s", d, ttl)
			}
			break
		}
		if duet.ErrorCode(err) != duet.CodeConflict || time.Now().After(deadline) {
			t.Fatalf("after p2's lease expired: %v", err)
		}
	}
	if _, err := st.LeaseCredential(ctx(t), "cred_missing", "p1", time.Minute); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("missing credential: got %v, want NOT_FOUND", err)
	}
}

func testMCPInvocations(t *testing.T, st duet.MCPClientStore) {
	base := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	var recs []*duet.Invocation
	for i, r := range []struct {
		executor, tool string
		source         duet.CallSource
		outcome        duet.Code
	}{
		{"alice", "query_order", duet.SourceEngine, duet.OutcomeOK},
		{"alice", "list_orders", duet.SourceCLI, duet.OutcomeOK},
		{"bob", "query_order", duet.SourceEngine, duet.CodeMCPServerNotConfigured},
		{"alice", "query_order", duet.SourceAgent, duet.CodeMCPToolError},
	} {
		recs = append(recs, &duet.Invocation{Time: base.Add(time.Duration(i) * time.Minute), TraceID: "trace-" + r.executor,
			Executor: r.executor, Source: r.source, ServerKey: "mcp_orders_0badcafe", Tool: r.tool, Outcome: r.outcome,
			DurationUs: int64(100 * (i + 1)), ArgBytes: 20, ResultBytes: 300})
	}
	if err := st.AppendInvocations(ctx(t), recs); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendInvocations(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    duet.InvocationFilter
		want []int // indexes into recs, newest first
	}{
		{"all", duet.InvocationFilter{}, []int{3, 2, 1, 0}},
		{"executor", duet.InvocationFilter{Executor: "alice"}, []int{3, 1, 0}},
		{"tool", duet.InvocationFilter{Tool: "query_order"}, []int{3, 2, 0}},
		{"source", duet.InvocationFilter{Source: duet.SourceEngine}, []int{2, 0}},
		{"outcome", duet.InvocationFilter{Outcome: duet.CodeMCPServerNotConfigured}, []int{2}},
		{"trace", duet.InvocationFilter{TraceID: "trace-bob"}, []int{2}},
		{"server", duet.InvocationFilter{ServerKey: "mcp_other_00000000"}, nil},
		{"since", duet.InvocationFilter{Since: base.Add(90 * time.Second)}, []int{3, 2}},
		{"until", duet.InvocationFilter{Until: base.Add(90 * time.Second)}, []int{1, 0}},
		{"limit", duet.InvocationFilter{Limit: 1}, []int{3}},
	}
	for _, tt := range tests {
		got, err := st.FindInvocations(ctx(t), tt.f)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var want []*duet.Invocation
		for _, i := range tt.want {
			want = append(want, recs[i])
		}
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}

	// A batch larger than one statement (an engine may insert many rows at
	// once): every record gets its own id, in order, and reads back as it
	// was given.
	var batch []*duet.Invocation
	for i := range 150 {
		batch = append(batch, &duet.Invocation{Time: base.Add(time.Duration(i) * time.Millisecond), TraceID: "trace-batch",
			Executor: "batch", Source: duet.SourceEngine, ServerKey: "mcp_orders_0badcafe", Tool: "tool-" + strconv.Itoa(i),
			Outcome: duet.OutcomeOK, DurationUs: int64(i), ArgBytes: i, ResultBytes: 2 * i})
	}
	if err := st.AppendInvocations(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	got, err := st.FindInvocations(ctx(t), duet.InvocationFilter{Executor: "batch", Limit: 1000})
	if err != nil || len(got) != len(batch) {
		t.Fatalf("the batch: got %d records, %v, want %d", len(got), err, len(batch))
	}
	for i, g := range got {
		want := batch[len(batch)-1-i] // newest first
		if diff := cmp.Diff(want, g, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Fatalf("record %d of the batch (-want +got):\n%s", i, diff)
		}
	}
}
