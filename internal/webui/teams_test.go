package webui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
)

// TestConsoleTeamRoles: on a team's page an owner sets roles and deletes
// the team; a member is offered neither, nor the dependency list's edits,
// and a forged form is refused (403). The register form carries the
// address the page showed: posted after the list changed, nothing is
// registered (409).
func TestConsoleTeamRoles(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	for _, u := range []string{"alice", "bob"} {
		if st, b, _ := e.Call(u, "POST", api.Prefix+"/servers", api.RegisterIn{Name: "orders", URL: e.OrderURL, Credentials: api.Credentials{BearerToken: e.OrderToken}}); st != http.StatusCreated {
			t.Fatalf("register for %s: %d %s", u, st, b)
		}
	}
	alice, bob := signIn(t, e, "alice"), signIn(t, e, "bob")
	alice.post("/teams", url.Values{"name": {"qa"}})
	alice.post("/teams/qa/members", url.Values{"user": {"bob"}})
	alice.post("/teams/qa/servers", url.Values{"from": {"orders"}})

	_, page, _ := alice.get("/teams/qa")
	for _, want := range []string{`action="/teams/qa/members/role"`, `action="/teams/qa/delete"`, `action="/teams/qa/servers/orders/remove"`, `name="url" value="` + e.OrderURL + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("alice's (owner) team page lacks %s", want)
		}
	}
	_, page, _ = bob.get("/teams/qa")
	for _, absent := range []string{`action="/teams/qa/members/role"`, `action="/teams/qa/delete"`, `action="/teams/qa/servers/orders/remove"`} {
		if strings.Contains(page, absent) {
			t.Errorf("bob's (member) team page offers %s", absent)
		}
	}
	if !regexp.MustCompile(`bob <span class="sub">member</span>`).MatchString(page) {
		t.Errorf("bob's role is not shown")
	}
	if st, _, _ := bob.post("/teams/qa/servers/orders/remove", nil); st != http.StatusForbidden {
		t.Errorf("bob removes an entry: %d, want 403", st)
	}
	if st, _, _ := bob.post("/teams/qa/members/role", url.Values{"user": {"bob"}, "role": {"owner"}}); st != http.StatusForbidden {
		t.Errorf("bob makes himself owner: %d, want 403", st)
	}

	// Registering from the list: a form carrying another address than the
	// list names now (a page read before the entry changed) registers
	// nothing; the address the page shows goes through.
	e.Call("bob", "DELETE", api.Prefix+"/servers/orders", nil)
	stale := url.Values{"url": {"https://old.example/mcp"}, "bearerToken": {e.OrderToken}}
	if st, body, _ := bob.post("/teams/qa/servers/orders/register", stale); st != http.StatusConflict {
		t.Errorf("register with a stale address: %d %.300s, want 409", st, body)
	}
	if st, body, _ := bob.post("/teams/qa/servers/orders/register", url.Values{"url": {e.OrderURL}, "bearerToken": {e.OrderToken}}); st != http.StatusSeeOther {
		t.Fatalf("register with the address shown: %d %.300s", st, body)
	}

	if st, _, _ := alice.post("/teams/qa/members/role", url.Values{"user": {"bob"}, "role": {"maintainer"}}); st != http.StatusSeeOther {
		t.Fatalf("alice makes bob a maintainer: %d", st)
	}
	if _, page, _ := bob.get("/teams/qa"); !strings.Contains(page, `action="/teams/qa/servers/orders/remove"`) {
		t.Errorf("bob, a maintainer, is not offered the list's edits")
	}
	if st, _, resp := alice.post("/teams/qa/delete", nil); st != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/teams?") {
		t.Fatalf("alice deletes qa: %d", st)
	}
	if st, _, _ := bob.get("/teams/qa"); st != http.StatusNotFound {
		t.Errorf("qa after it was deleted: %d", st)
	}
}
