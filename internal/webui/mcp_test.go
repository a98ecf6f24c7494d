package webui_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/sample"
)

// consoleAnswer is what an MCP page must be after an error: the page of
// the thing at hand (its h1), the problem in words, advice that names the
// console's own form or button, and no command for a terminal.
func consoleAnswer(t *testing.T, what string, status int, body string, wantStatus int, h1 string, advice ...string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s: status %d, want %d", what, status, wantStatus)
	}
	if !strings.Contains(body, "<h1>"+h1+"</h1>") {
		t.Errorf("%s: not the page %q: %.3000s", what, h1, body)
	}
	m := regexp.MustCompile(`(?s)<p id="advice">(.*?)</p>`).FindStringSubmatch(body)
	if m == nil {
		t.Errorf("%s: no advice: %.3000s", what, body)
		return
	}
	for _, a := range advice {
		if !strings.Contains(m[1], a) {
			t.Errorf("%s: the advice %q does not say %q", what, m[1], a)
		}
	}
	for _, cli := range []string{"duet server", "--replace", "`duet"} {
		if strings.Contains(body, cli) {
			t.Errorf("%s: the page gives terminal advice (%q): %.3000s", what, cli, body)
		}
	}
}

// TestMCPPagesSayWhatToDo: every error on the MCP pages says what to do
// in the console, with the form at hand. A registration whose token the
// server refuses lands on its own page with a form to replace it; Sync
// failing there stays there; a second name for an address already
// registered brings back the form named after the first, Replace ticked;
// a call that fails links to where it is fixed; registering from a team's
// list with a wrong token, or twice, says the same; a registration that
// is gone says so on the MCP page.
func TestMCPPagesSayWhatToDo(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	replaceForm := regexp.MustCompile(`<form method="post" action="/servers" class="stack" autocomplete="off">\s*<input type="hidden" name="csrf" value="[^"]+">\s*<input type="hidden" name="name" value="orders">\s*<input type="hidden" name="replace" value="true">`)

	// A wrong token: the registration is kept, unsynced; its page says
	// what to do and has the form.
	status, body, _ := alice.post("/servers", url.Values{"name": {"orders"}, "url": {e.OrderURL}, "bearerToken": {"wrong-token"}})
	consoleAnswer(t, "a registration with a wrong token", status, body, http.StatusBadGateway, "MCP server orders", "refused the credentials", "Replace the registration")
	if !replaceForm.MatchString(body) || strings.Contains(body, "wrong-token") {
		t.Fatalf("no form to replace the registration, or the token rendered: %.4000s", body)
	}
	// Sync, pressed on it: the same page, the same advice — not a bare
	// error page.
	status, body, _ = alice.post("/servers/orders/sync", nil)
	consoleAnswer(t, "Sync with a wrong token", status, body, http.StatusBadGateway, "MCP server orders", "refused the credentials", "Replace and sync")
	if !replaceForm.MatchString(body) || !strings.Contains(body, `id="sync"`) {
		t.Errorf("the page after Sync lacks its forms: %.4000s", body)
	}
	// The form, filled in: replaced and synced.
	status, _, resp := alice.post("/servers", url.Values{"name": {"orders"}, "replace": {"true"}, "url": {e.OrderURL}, "bearerToken": {e.OrderToken}})
	if status != http.StatusSeeOther || resp.Header.Get("Location") != "/servers/orders?done=registered" {
		t.Fatalf("replace the registration: %d %s", status, resp.Header.Get("Location"))
	}
	if _, body, _ = alice.get("/servers/orders"); !strings.Contains(body, `badge synced">synced<`) {
		t.Fatalf("the replaced registration is not synced: %.2000s", body)
	}

	// A second name for the same address: the form comes back named after
	// the first, Replace ticked.
	status, body, _ = alice.post("/servers", url.Values{"name": {"orders-2"}, "url": {e.OrderURL}, "bearerToken": {e.OrderToken}})
	consoleAnswer(t, "a second name for an address", status, body, http.StatusConflict, "MCP servers", "&#34;orders&#34;", "Replace my registration ticked")
	if !strings.Contains(body, `id="name" name="name" required value="orders"`) || !regexp.MustCompile(`id="replace" name="replace" value="true" checked`).MatchString(body) {
		t.Errorf("the form is not ready to replace orders: %.4000s", body)
	}
	if status, _, _ := alice.post("/servers", url.Values{"name": {"orders"}, "replace": {"true"}, "url": {e.OrderURL}, "bearerToken": {e.OrderToken}}); status != http.StatusSeeOther {
		t.Errorf("the form as the advice fills it: %d", status)
	}

	// A call that fails: the tool page links to where it is fixed.
	token, _ := auth.NewToken()
	otherURL, stop, err := sample.StartOrderServer(context.Background(), "127.0.0.1:0", sample.NewOrders(), token)
	if err != nil {
		t.Fatal(err)
	}
	if status, body, _ := alice.post("/servers", url.Values{"name": {"shop"}, "url": {otherURL}, "bearerToken": {token}}); status != http.StatusSeeOther {
		t.Fatalf("register shop: %d %.500s", status, body)
	}
	stop()
	status, body, _ = alice.post("/servers/shop/tools/query_order", url.Values{"arg.orderId": {"A1001"}})
	if status != http.StatusOK || !strings.Contains(body, "<h1>query_order — shop</h1>") || !strings.Contains(body, `href="/servers/shop#replace" id="advice-link"`) ||
		!strings.Contains(body, "MCP_UNREACHABLE") || !strings.Contains(body, "Sync the catalog once it is back") {
		t.Errorf("a call to a server that is gone: %d %.4000s", status, body)
	}
	// A tool the archive no longer has: the server page, with Sync.
	status, body, _ = alice.get("/servers/orders/tools/no_such_tool")
	consoleAnswer(t, "a tool that is gone", status, body, http.StatusNotFound, "MCP server orders", "Sync the catalog")

	// From a team's list: a wrong token lands on the new registration's
	// page; registering it again says where it is.
	alice.post("/teams", url.Values{"name": {"qa"}})
	alice.post("/teams/qa/members", url.Values{"user": {"bob"}})
	if status, body, _ := alice.post("/teams/qa/servers", url.Values{"from": {"orders"}}); status != http.StatusSeeOther {
		t.Fatalf("list orders: %d %.500s", status, body)
	}
	bob := signIn(t, e, "bob")
	status, body, _ = bob.post("/teams/qa/servers/orders/register", url.Values{"url": {e.OrderURL}, "bearerToken": {"wrong"}})
	consoleAnswer(t, "bob registers from the list with a wrong token", status, body, http.StatusBadGateway, "MCP server orders", "refused the credentials", "Replace the registration")
	status, body, _ = bob.post("/teams/qa/servers/orders/register", url.Values{"url": {e.OrderURL}, "bearerToken": {e.OrderToken}})
	consoleAnswer(t, "bob registers from the list again", status, body, http.StatusConflict, "Team qa", "&#34;orders&#34;", "Replace the registration")
	if !strings.Contains(body, `href="/servers/orders#replace" id="advice-link"`) {
		t.Errorf("the team page does not link to the registration: %.4000s", body)
	}

	// A registration that is gone.
	status, body, _ = alice.post("/servers/nothing/remove", nil)
	consoleAnswer(t, "removing a registration that is gone", status, body, http.StatusNotFound, "MCP servers", "register the server again")
	status, body, _ = alice.post("/servers/nothing/sync", nil)
	consoleAnswer(t, "syncing a registration that is gone", status, body, http.StatusNotFound, "MCP servers", "register the server again")
}
