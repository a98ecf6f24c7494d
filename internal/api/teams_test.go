package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
)

// call sends a REST request as user and decodes a 2xx answer into out (nil:
// ignored); it returns the status and the error code of a refusal.
func call(t *testing.T, e *apptest.Env, user, method, path string, body, out any) (int, duet.Code, string) {
	t.Helper()
	status, b, _ := e.Call(user, method, api.Prefix+path, body)
	if status/100 == 2 && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return status, apptest.ErrCode(b), string(b)
}

// TestTeamReferencesOverREST: over the REST API, a task cannot be shared
// with (or handed to) a team that does not exist — the review's "share with
// team:ops before ops exists" — so whoever creates ops later reads nothing;
// a user id cannot be "team:x"; a team deleted and re-created by someone
// else inherits no share.
func TestTeamReferencesOverREST(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	var applied duet.ApplyResult
	if st, code, b := call(t, e, "alice", "POST", "/tasks", api.ApplyIn{Source: apptest.Suite("plain")}, &applied); st/100 != 2 {
		t.Fatalf("apply: %d %s %s", st, code, b)
	}
	task := "/tasks/" + applied.Task.ID
	st, code, b := call(t, e, "alice", "POST", task+"/shares", api.ShareIn{With: "team:ops"}, nil)
	if st != http.StatusBadRequest || code != duet.CodeInvalidArgument || !strings.Contains(b, `\"ops\"`) {
		t.Fatalf("share with team:ops before it exists: %d %s %s", st, code, b)
	}
	if _, code, _ := call(t, e, "alice", "POST", task+"/transfer", api.TransferIn{To: "team:ops"}, nil); code != duet.CodeInvalidArgument {
		t.Fatalf("transfer to team:ops before it exists: %s", code)
	}
	if _, code, _ := call(t, e, "alice", "POST", "/assets", api.AssetIn{Kind: duet.AssetSkill, Name: "login", Body: "log in", SharedWith: &[]string{"team:ops"}}, nil); code != duet.CodeInvalidArgument {
		t.Fatalf("an asset shared with team:ops before it exists: %s", code)
	}
	if st, _, b := call(t, e, "bob", "POST", "/teams", api.TeamIn{Name: "ops"}, nil); st != http.StatusCreated {
		t.Fatalf("bob creates ops: %d %s", st, b)
	}
	var list struct {
		Total int `json:"total"`
	}
	if call(t, e, "bob", "GET", "/tasks", nil, &list); list.Total != 0 {
		t.Fatalf("bob, who created ops afterwards, sees %d task(s)", list.Total)
	}
	// A user id cannot be "team:x": not as a member, not as a share.
	if _, code, _ := call(t, e, "bob", "POST", "/teams/ops/members", api.MemberIn{User: "team:x"}, nil); code != duet.CodeInvalidArgument {
		t.Fatalf("adding the user team:x: %s", code)
	}

	// Shared with alice's qa; qa deleted; bob re-creates qa: nothing.
	call(t, e, "alice", "POST", "/teams", api.TeamIn{Name: "qa"}, nil)
	if st, _, b := call(t, e, "alice", "POST", task+"/shares", api.ShareIn{With: "team:qa"}, nil); st != http.StatusOK {
		t.Fatalf("share with qa: %d %s", st, b)
	}
	if st, _, b := call(t, e, "alice", "DELETE", "/teams/qa", nil, nil); st/100 != 2 {
		t.Fatalf("deleting qa: %d %s", st, b)
	}
	call(t, e, "bob", "POST", "/teams", api.TeamIn{Name: "qa"}, nil)
	if st, code, _ := call(t, e, "bob", "GET", task, nil, nil); code != duet.CodeNotFound {
		t.Fatalf("bob, in the re-created qa, reads alice's task: %d %s", st, code)
	}
	if _, _, b := call(t, e, "alice", "GET", task, nil, nil); strings.Contains(b, "team:qa") {
		t.Fatalf("alice's task still lists team:qa: %s", b)
	}
}

// TestTeamRolesOverREST: the review's reproduction over REST — a member
// removes the maintainer who listed an entry and re-points it — is refused
// with PERMISSION_DENIED; roles are set by owners; a registration from the
// list is pinned to the address the person gives.
func TestTeamRolesOverREST(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	must := func(user, method, path string, body, out any) {
		t.Helper()
		if st, code, b := call(t, e, user, method, path, body, out); st/100 != 2 {
			t.Fatalf("%s %s as %s: %d %s %s", method, path, user, st, code, b)
		}
	}
	for _, u := range []string{"bob", "root"} {
		must(u, "POST", "/servers", api.RegisterIn{Name: "orders", URL: e.OrderURL, Credentials: api.Credentials{BearerToken: e.OrderToken}}, nil)
	}
	must("alice", "POST", "/teams", api.TeamIn{Name: "qa"}, nil)
	must("alice", "POST", "/teams/qa/members", api.MemberIn{User: "bob"}, nil)
	must("alice", "POST", "/teams/qa/members", api.MemberIn{User: "root"}, nil)
	var detail api.TeamDetail
	must("alice", "POST", "/teams/qa/members/root/role", api.RoleIn{Role: duet.RoleMaintainer}, &detail)
	if detail.Team.Roles["alice"] != duet.RoleOwner || detail.Team.Roles["root"] != duet.RoleMaintainer || detail.Team.Roles["bob"] != duet.RoleMember {
		t.Fatalf("roles: %+v", detail.Team.Roles)
	}
	must("root", "POST", "/teams/qa/servers", api.TeamServerIn{From: "orders"}, nil)

	// bob, a member: removes the maintainer, re-points the entry, removes
	// it, makes himself owner — each PERMISSION_DENIED.
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"DELETE", "/teams/qa/members/root", nil},
		{"POST", "/teams/qa/servers", api.TeamServerIn{From: "orders", Description: "mine now"}},
		{"DELETE", "/teams/qa/servers/orders", nil},
		{"POST", "/teams/qa/members/bob/role", api.RoleIn{Role: duet.RoleOwner}},
		{"DELETE", "/teams/qa", nil},
	} {
		if st, code, b := call(t, e, "bob", r.method, r.path, r.body, nil); st != http.StatusForbidden || code != duet.CodePermissionDenied {
			t.Errorf("bob %s %s: %d %s %s, want 403 PERMISSION_DENIED", r.method, r.path, st, code, b)
		}
	}
	// The last owner cannot leave.
	if _, code, _ := call(t, e, "alice", "DELETE", "/teams/qa/members/alice", nil, nil); code != duet.CodeConflict {
		t.Errorf("the last owner leaves: %s, want CONFLICT", code)
	}

	// Registering from the list: the address must be the entry's.
	must("bob", "DELETE", "/servers/orders", nil, nil)
	st, code, b := call(t, e, "bob", "POST", "/teams/qa/servers/orders/register",
		api.TeamRegisterIn{URL: "https://elsewhere.example/mcp", Credentials: api.Credentials{BearerToken: e.OrderToken}}, nil)
	if st != http.StatusConflict || code != duet.CodeConflict || !strings.Contains(b, e.OrderURL) {
		t.Fatalf("register pinned to another address: %d %s %s", st, code, b)
	}
	if _, code, _ := call(t, e, "bob", "POST", "/teams/qa/servers/orders/register", api.Credentials{BearerToken: e.OrderToken}, nil); code != duet.CodeInvalidArgument {
		t.Fatalf("register without the address: %s, want INVALID_ARGUMENT", code)
	}
	u, _ := url.Parse(e.OrderURL)
	u.Host = strings.ToUpper(u.Hostname()) + ":" + u.Port() // another spelling of the same server
	var reg api.ServerDetail
	must("bob", "POST", "/teams/qa/servers/orders/register", api.TeamRegisterIn{URL: u.String(), Credentials: api.Credentials{BearerToken: e.OrderToken}}, &reg)
	if reg.Server.Status != "synced" {
		t.Fatalf("registered: %+v", reg.Server)
	}
}

// TestTokenLineageOverREST: the review's reproductions — a token created
// with a 1-hour token asks for no expiry (refused, 403 PERMISSION_DENIED;
// nothing created) and, created within the parent's life, stops working
// when the parent is revoked. A console session started with a token
// creates children of that token too.
func TestTokenLineageOverREST(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	var parent api.TokenCreated
	hour := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if st, code, b := call(t, e, "alice", "POST", "/tokens", api.TokenIn{Name: "1h", ExpiresAt: hour}, &parent); st != http.StatusCreated {
		t.Fatalf("a 1h token: %d %s %s", st, code, b)
	}
	e.Tokens["alice-1h"] = parent.Secret
	for _, in := range []api.TokenIn{{Name: "forever"}, {Name: "week", ExpiresInDays: 7}, {Name: "later", ExpiresAt: hour.Add(time.Minute)}} {
		st, code, b := call(t, e, "alice-1h", "POST", "/tokens", in, nil)
		if st != http.StatusForbidden || code != duet.CodePermissionDenied || !strings.Contains(b, hour.Format(time.RFC3339)) {
			t.Errorf("the 1h token creates %q: %d %s %s, want 403 PERMISSION_DENIED naming its expiry", in.Name, st, code, b)
		}
	}
	var child api.TokenCreated
	if st, code, b := call(t, e, "alice-1h", "POST", "/tokens", api.TokenIn{Name: "job", ExpiresAt: hour.Add(-time.Minute)}, &child); st != http.StatusCreated {
		t.Fatalf("a child within the parent's life: %d %s %s", st, code, b)
	}
	if child.Token.ParentID != parent.Token.ID {
		t.Fatalf("the child's parent: %q, want %s", child.Token.ParentID, parent.Token.ID)
	}
	e.Tokens["alice-child"] = child.Secret
	if st, _, b := call(t, e, "alice-child", "GET", "/me", nil, nil); st != http.StatusOK {
		t.Fatalf("the child works: %d %s", st, b)
	}
	if _, code, _ := call(t, e, "alice", "POST", "/tokens", api.TokenIn{Name: "x", ExpiresInDays: 1, ExpiresAt: hour}, nil); code != duet.CodeInvalidArgument {
		t.Errorf("both expiresInDays and expiresAt: %s", code)
	}

	// A console session started with the 1h token: its tokens are children.
	c, csrf := e.SignIn("alice-1h")
	resp, err := c.PostForm(e.URL+"/tokens", url.Values{"name": {"from-console"}, "expiresInDays": {"90"}, "csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the console, signed in with the 1h token, creates a 90-day token: %d, want 403", resp.StatusCode)
	}

	if st, _, b := call(t, e, "alice", "DELETE", "/tokens/"+parent.Token.ID, nil, nil); st/100 != 2 {
		t.Fatalf("revoking the parent: %d %s", st, b)
	}
	if st, _, _ := call(t, e, "alice-child", "GET", "/me", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("the child after its parent was revoked: %d, want 401", st)
	}
	var toks api.TokenList
	call(t, e, "alice", "GET", "/tokens", nil, &toks)
	for _, tk := range toks.Tokens {
		if tk.ID == child.Token.ID {
			t.Fatal("the child is still listed")
		}
	}
}
