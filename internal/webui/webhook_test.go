package webui_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/webhook"
)

// hookRequest is a delivery a test receiver got.
type hookRequest struct {
	event, delivery, signature string
	body                       []byte
}

func hookReceiver(t *testing.T) (*httptest.Server, chan hookRequest) {
	got := make(chan hookRequest, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- hookRequest{event: r.Header.Get(webhook.HeaderEvent), delivery: r.Header.Get(webhook.HeaderDelivery), signature: r.Header.Get(webhook.HeaderSignature), body: b}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func nextHook(t *testing.T, got chan hookRequest, event string) hookRequest {
	t.Helper()
	giveUp := time.After(2 * time.Minute) // a bound for a broken build, not a timing claim
	for {
		select {
		case r := <-got:
			if r.event == event {
				return r
			}
		case <-giveUp:
			t.Fatalf("no %s delivery", event)
		}
	}
}

var secretRe = regexp.MustCompile(`<code id="new-secret">([^<]+)</code>`)

// TestConsoleWebhooks: the task's owner adds a webhook on the console and
// sees its secret once; a failed run is delivered, signed with that
// secret; the deliveries are listed with status, attempts and response
// code, and a redeliver sends one again. Someone the task is shared with
// sees none of it.
func TestConsoleWebhooks(t *testing.T) {
	t.Parallel()
	e := apptest.Serve(t, nil)
	srv, got := hookReceiver(t)
	alice := signIn(t, e, "alice")
	suite := "task:\n  name: hooked-shop\n  baseURL: http://127.0.0.1:9\ncases:\n  - {key: c, title: a failing case, steps: [{assert: 'false'}]}\n"
	_, _, resp := alice.post("/tasks/apply", url.Values{"source": {suite}})
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	taskID := strings.TrimPrefix(taskPath, "/tasks/")
	if _, body, _ := alice.get(taskPath); !strings.Contains(body, `id="webhooks-link"`) {
		t.Fatalf("the task page links no webhooks: %.2000s", body)
	}
	status, body, _ := alice.post(taskPath+"/webhooks", url.Values{"name": {"chat"}, "url": {srv.URL + "/hook?token=t0ps3cret"}, "events": {"run.finished", "case.broken"}, "on": {"failure"}, "format": {"json"}})
	if status != http.StatusSeeOther {
		t.Fatalf("add a webhook: %d %.1000s", status, body)
	}
	_, body, _ = alice.get(taskPath + "/webhooks")
	m := secretRe.FindStringSubmatch(body)
	if m == nil || !strings.HasPrefix(m[1], webhook.SecretPrefix) {
		t.Fatalf("the new secret is not shown: %.3000s", body)
	}
	secret := html.UnescapeString(m[1])
	if _, again, _ := alice.get(taskPath + "/webhooks"); strings.Contains(again, secret) || !strings.Contains(again, "No deliveries yet.") {
		t.Fatalf("the secret is shown twice, or the webhook is not listed: %.3000s", again)
	}
	// Only the owner: bob, with whom the task is shared, sees no webhooks.
	if _, err := e.App.API.ShareTask(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceAPI}, taskID, apiShare("bob")); err != nil {
		t.Fatal(err)
	}
	bob := signIn(t, e, "bob")
	if status, body, _ := bob.get(taskPath + "/webhooks"); status != http.StatusNotFound || strings.Contains(body, srv.URL) {
		t.Fatalf("bob's view of the webhooks: %d %.1000s", status, body)
	}
	if _, body, _ := bob.get(taskPath); strings.Contains(body, `id="webhooks-link"`) {
		t.Fatalf("bob is offered the webhooks")
	}

	out, err := e.App.API.StartRun(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceAPI}, catalog.StartRunIn{TaskID: taskID, IdempotencyKey: "hook-1"})
	if err != nil {
		t.Fatal(err)
	}
	r := nextHook(t, got, "run.finished")
	if !webhook.Verify(secret, r.signature, r.body, time.Now(), 5*time.Minute) {
		t.Fatalf("the signature does not verify with the secret shown: %s", r.signature)
	}
	var p webhook.Payload
	if err := json.Unmarshal(r.body, &p); err != nil || p.Run == nil || p.Run.ID != out.RunID || p.Run.Status != duet.StatusFailed || len(p.FailedCases) != 1 {
		t.Fatalf("payload: %s %v", r.body, err)
	}
	// The page lists it (its record is written just after the answer).
	var page string
	for deadline := time.Now().Add(time.Minute); ; {
		_, page, _ = alice.get(taskPath + "/webhooks")
		if strings.Contains(page, "delivery-delivered") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(page, "delivery-delivered") || !strings.Contains(page, "<td>200</td>") || !strings.Contains(page, out.RunID) || !strings.Contains(page, ">Redeliver</button>") {
		t.Fatalf("the deliveries: %.5000s", page)
	}
	if status, _, _ := alice.post(taskPath+"/deliveries/"+r.delivery+"/redeliver", nil); status != http.StatusSeeOther {
		t.Fatalf("redeliver: %d", status)
	}
	if again := nextHook(t, got, "run.finished"); again.delivery == r.delivery || string(again.body) != string(r.body) {
		t.Fatalf("redelivered: %+v", again)
	}
	if status, _, _ := bob.post(taskPath+"/deliveries/"+r.delivery+"/redeliver", nil); status == http.StatusSeeOther {
		t.Fatal("bob redelivered")
	}
	// Rotating shows a new secret, once.
	list, _ := e.App.Store.FindWebhooks(t.Context(), "alice", taskID)
	alice.post(taskPath+"/webhooks/"+list[0].ID+"/rotate", nil)
	_, body, _ = alice.get(taskPath + "/webhooks")
	if m := secretRe.FindStringSubmatch(body); m == nil || html.UnescapeString(m[1]) == secret {
		t.Fatalf("rotate: %.2000s", body)
	}
}

func apiShare(with string) api.ShareIn { return api.ShareIn{With: with} }

func apiWebhook(taskID, u string) api.WebhookIn {
	return api.WebhookIn{TaskID: taskID, Name: "alerts", URL: u, Events: []string{"case.broken", "case.changed"}}
}

// TestTimedSyncNotifiesBrokenCase: the sample order server's query_order
// gains a required argument while nobody syncs and Duet holds no session
// (so no list_changed reaches it); the catalog sync timer, its clock moved
// past DUET_MCP_SYNC_INTERVAL, syncs the registration as its owner, the
// dependent case is flagged broken, the task's webhook is told
// (case.broken), and its owner sees a badge on every console page and the
// case on the alerts page.
func TestTimedSyncNotifiesBrokenCase(t *testing.T) {
	t.Parallel()
	orders := sample.NewOrderServer(sample.NewOrders())
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return orders }, nil))
	t.Cleanup(hs.Close)
	e := apptest.Serve(t, map[string]string{"DUET_MCP_SYNC_INTERVAL": "1h"})
	srv, got := hookReceiver(t)
	if _, err := e.App.MCPClient.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "orders", URL: hs.URL}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.MCPClient.Sync(t.Context(), "alice", "orders"); err != nil {
		t.Fatal(err)
	}
	alice := signIn(t, e, "alice")
	suite := "task:\n  name: orders\n  baseURL: http://127.0.0.1:9\ncases:\n" +
		"  - key: one\n    title: one order\n    steps:\n      - mcpCall: {server: orders, tool: " + sample.ToolQueryOrder + ", input: {orderId: A1001}}\n"
	_, _, resp := alice.post("/tasks/apply", url.Values{"source": {suite}})
	taskID := strings.TrimPrefix(strings.Split(resp.Header.Get("Location"), "?")[0], "/tasks/")
	made, err := e.App.API.CreateWebhook(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceAPI}, apiWebhook(taskID, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, body, _ := alice.get("/tasks"); strings.Contains(body, `id="broken-badge"`) {
		t.Fatal("a badge before any change")
	}
	// Nothing is due within the interval.
	syncer := e.App.CatalogSync
	syncer.Now = func() time.Time { return time.Now().Add(30 * time.Minute) }
	if n := syncer.SyncDue(t.Context()); n != 0 {
		t.Fatalf("synced %d registrations within the interval", n)
	}

	// The other team's change.
	orders.AddTool(&mcp.Tool{Name: sample.ToolQueryOrder, Description: "Read one order of one region.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"},"region":{"type":"string"}},"required":["orderId","region"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
		})
	syncer.Now = func() time.Time { return time.Now().Add(61 * time.Minute) }
	if n := syncer.SyncDue(t.Context()); n != 1 {
		t.Fatalf("the timer synced %d registrations, want 1", n)
	}
	if n := syncer.SyncDue(t.Context()); n != 0 {
		t.Fatalf("synced again at once: %d", n)
	}
	alerts, err := e.App.Store.FindContractAlerts(t.Context(), "alice", taskID)
	if err != nil || len(alerts) != 1 || !alerts[0].Broken {
		t.Fatalf("alerts: %+v %v", alerts, err)
	}

	r := nextHook(t, got, "case.broken")
	if !webhook.Verify(made.Secret, r.signature, r.body, time.Now(), 5*time.Minute) {
		t.Fatal("the case.broken delivery's signature does not verify")
	}
	var p webhook.Payload
	if err := json.Unmarshal(r.body, &p); err != nil || p.Alert == nil || p.Alert.CaseKey != "one" || !strings.Contains(strings.Join(p.Alert.Problems, ";"), "region") ||
		!strings.HasSuffix(p.Alert.URL, "/cases/"+alerts[0].CaseID) || p.Task.Owner != "alice" {
		t.Fatalf("case.broken payload: %s %v", r.body, err)
	}
	_, body, _ := alice.get("/tasks")
	if !strings.Contains(body, `id="broken-badge"`) || !strings.Contains(body, "1 broken case") {
		t.Fatalf("no badge for the owner: %.2000s", body)
	}
	_, body, _ = alice.get("/alerts")
	if !strings.Contains(body, `id="all-alerts"`) || !strings.Contains(body, "one order") || !strings.Contains(body, "Broken by a dependency change") {
		t.Fatalf("the alerts page: %.3000s", body)
	}
	if _, body, _ := signIn(t, e, "bob").get("/tasks"); strings.Contains(body, `id="broken-badge"`) {
		t.Fatal("bob, who cannot see the task, has the badge")
	}
}

// TestConsoleSecrets: a user sets a vault secret on the console; the page
// lists its name and never its value (nor does a refused form's answer);
// someone else sees none of it, an administrator sees the names and may
// remove it.
func TestConsoleSecrets(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	const value = "c0nsole-v4lue-77"
	alice := signIn(t, e, "alice")
	if status, body, _ := alice.post("/secrets", url.Values{"name": {"SHOP_PW"}, "value": {value}}); status != http.StatusSeeOther {
		t.Fatalf("set: %d %.1000s", status, body)
	}
	_, body, _ := alice.get("/secrets")
	if !strings.Contains(body, "<code>SHOP_PW</code>") || strings.Contains(body, value) || !strings.Contains(body, `type="password"`) {
		t.Fatalf("the secrets page: %.3000s", body)
	}
	if status, body, _ := alice.post("/secrets", url.Values{"name": {"1bad"}, "value": {value}}); status == http.StatusSeeOther || strings.Contains(body, value) {
		t.Fatalf("a refused form: %d, value echoed: %v", status, strings.Contains(body, value))
	}
	got, err := e.App.Secrets.ReadSecrets(t.Context(), "alice", []string{"SHOP_PW"})
	if err != nil || got["SHOP_PW"] != value {
		t.Fatalf("stored: %v %v", got, err)
	}
	bob := signIn(t, e, "bob")
	if status, body, _ := bob.get("/secrets?user=alice"); status != http.StatusForbidden || strings.Contains(body, "SHOP_PW") {
		t.Fatalf("bob's look at alice's secrets: %d %.1000s", status, body)
	}
	if _, body, _ := bob.get("/secrets"); strings.Contains(body, "SHOP_PW") {
		t.Fatal("bob sees alice's secret")
	}
	root := signIn(t, e, "root")
	if _, body, _ := root.get("/secrets?user=alice"); !strings.Contains(body, "<code>SHOP_PW</code>") || strings.Contains(body, value) || strings.Contains(body, `id="set-secret"`) {
		t.Fatalf("root's view: %.2000s", body)
	}
	if status, _, _ := root.post("/secrets/SHOP_PW/delete", url.Values{"user": {"alice"}}); status != http.StatusSeeOther {
		t.Fatalf("root removes: %d", status)
	}
	if got, _ := e.App.Secrets.ReadSecrets(t.Context(), "alice", []string{"SHOP_PW"}); len(got) != 0 {
		t.Fatalf("after removal: %v", got)
	}
}
