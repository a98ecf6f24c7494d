package webui_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
)

type browser struct {
	t    *testing.T
	e    *apptest.Env
	c    *http.Client
	csrf string
}

func (b *browser) get(path string) (int, string, *http.Response) {
	b.t.Helper()
	resp, err := b.c.Get(b.e.URL + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp
}

func (b *browser) post(path string, form url.Values) (int, string, *http.Response) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if b.csrf != "" && !form.Has("csrf") {
		form.Set("csrf", b.csrf)
	}
	resp, err := b.c.PostForm(b.e.URL+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp
}

func signIn(t *testing.T, e *apptest.Env, user string) *browser {
	c, csrf := e.SignIn(user)
	return &browser{t: t, e: e, c: c, csrf: csrf}
}

const xss = `<img src=x onerror=alert(1)>`

// TestPagesRender: every page of the console renders for a signed-in user,
// with the security headers, every value escaped, and nothing of another
// user's.
func TestPagesRender(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	src := "task:\n  name: '" + xss + " shop'\n  description: '<script>alert(2)</script>'\n  baseURL: http://127.0.0.1:9\ncases:\n  - key: sums\n    title: '" + xss + "'\n    steps:\n      - set: {x: '1 + 1'}\n      - assert: x == 2\n"
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {src}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	bad := "task: {name: broken}\ncases:\n  - title: x\n    steps:\n      - clack: '" + xss + "'\n"
	if status, body, _ := alice.post("/tasks/apply", url.Values{"source": {bad}}); status != http.StatusBadRequest ||
		!strings.Contains(body, "suite.yaml:5") || !strings.Contains(body, "clack: &#39;&lt;img src=x") {
		t.Errorf("a suite that does not compile: %d, want 400 with the compiler's message and the source kept: %.2000s", status, body)
	}
	status, _, resp = alice.post(taskPath+"/runs", url.Values{"idempotencyKey": {"k"}})
	if status != http.StatusSeeOther {
		t.Fatalf("start a run: %d", status)
	}
	runPath := resp.Header.Get("Location")
	runID := strings.TrimPrefix(runPath, "/runs/")
	if ok, err := e.App.Worker.ExecuteRun(t.Context(), runID); !ok || err != nil {
		t.Fatalf("run: %v %v", ok, err)
	}
	if status, body, _ := alice.post("/servers", url.Values{"name": {"orders"}, "url": {e.OrderURL}, "bearerToken": {e.OrderToken}}); status != http.StatusSeeOther {
		t.Fatalf("register: %d %s", status, body)
	}
	alice.post("/assets", url.Values{"kind": {"rule"}, "name": {"no-prod"}, "body": {xss}})
	alice.post("/teams", url.Values{"name": {"qa"}})
	taskID := strings.TrimPrefix(taskPath, "/tasks/")
	pages := []string{"/tasks", "/tasks?q=shop", "/tasks/apply", taskPath, taskPath + "/trends", "/runs", "/runs?status=passed", runPath,
		runPath + "/report", "/assets", "/assets?kind=rule", "/assets/rule/alice/no-prod", "/servers", "/servers/orders",
		"/servers/orders/tools/query_order", "/teams", "/teams/qa", "/audit", "/audit?view=invocations", "/tokens",
		// the queries the pages' own links and forms produce
		taskPath + "/trends?runs=5", "/assets/rule/alice/no-prod?version=1", "/runs?task=&status=&cursor=", "/tasks?done=applied",
		runPath + "/report?format=html&download", "/audit?view=audit&user=&tool=&method=&source=&outcome=&traceId=&before=" + url.QueryEscape(time.Now().UTC().Format(time.RFC3339Nano))}
	for _, p := range pages {
		status, body, resp := alice.get(p)
		if status != 200 {
			t.Errorf("%s: %d %s", p, status, body)
			continue
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") && !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", p, csp)
		}
		if strings.Contains(body, "<img src=x") || strings.Contains(body, "<script>alert") {
			t.Errorf("%s renders markup from data unescaped", p)
		}
		if strings.Contains(body, e.OrderToken) {
			t.Errorf("%s renders the server's credential", p)
		}
		if strings.Contains(body, "<script>") && !strings.Contains(p, "report") {
			if regexp.MustCompile(`<script>[^<]`).MatchString(body) {
				t.Errorf("%s has inline script", p)
			}
		}
	}
	if _, body, _ := alice.get(taskPath); !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt; shop") {
		t.Errorf("the task name is not shown as text")
	}

	// bob sees none of it.
	bob := signIn(t, e, "bob")
	for _, p := range []string{taskPath, taskPath + "/trends", runPath, runPath + "/report", runPath + "/events", "/assets/rule/alice/no-prod", "/servers/orders", "/servers/orders/tools/query_order", "/teams/qa"} {
		if status, body, _ := bob.get(p); status != 404 {
			t.Errorf("bob GET %s: %d, want 404: %.200s", p, status, body)
		}
	}
	for _, p := range []string{"/tasks", "/runs", "/assets", "/servers", "/teams", "/audit", "/audit?view=invocations", "/tokens"} {
		_, body, _ := bob.get(p)
		for _, s := range []string{taskID, runID, "no-prod", "orders", "shop"} {
			if strings.Contains(body, s) {
				t.Errorf("bob's %s shows %q", p, s)
			}
		}
	}
	if status, _, _ := bob.get("/audit?user=alice"); status != 403 {
		t.Errorf("bob asks for alice's audit: %d, want 403", status)
	}
	for _, p := range []string{taskPath + "/share", runPath + "/cancel", "/servers/orders/sync", "/servers/orders/tools/query_order"} {
		if status, _, _ := bob.post(p, url.Values{"with": {"bob"}, "arg.orderId": {"A1001"}}); status != 404 {
			t.Errorf("bob POST %s: %d, want 404", p, status)
		}
	}

	// A state change without the CSRF token is refused and changes nothing.
	status, body, _ = alice.post(taskPath+"/share", url.Values{"with": {"mallory"}, "csrf": {""}})
	if status != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Fatalf("share without the CSRF token: %d %.300s", status, body)
	}
	if task, _ := e.App.Store.FindTaskByID(t.Context(), "alice", taskID); len(task.SharedWith) != 0 {
		t.Fatalf("a refused request shared the task: %v", task.SharedWith)
	}
	e.App.Audit.Flush()
	if recs, _ := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", CallSource: duet.SourceWeb, Outcome: duet.CodePermissionDenied}); len(recs) != 1 {
		t.Errorf("the refused request was audited %d times, want 1", len(recs))
	}

	// Not signed in: pages redirect to the sign-in page; changes are refused.
	anon := &browser{t: t, e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if status, _, resp := anon.get("/runs"); status != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin?next=") {
		t.Errorf("anonymous GET /runs: %d %s", status, resp.Header.Get("Location"))
	}
	if status, _, _ := anon.post(taskPath+"/share", url.Values{"with": {"x"}}); status != http.StatusUnauthorized {
		t.Errorf("anonymous POST: %d, want 401", status)
	}
	// Login CSRF: a sign-in posted by another site (no form token, or
	// one without the browser's cookie) is refused before the token is
	// looked at, and audited; one from the form goes on.
	if status, body, _ := anon.post("/signin", url.Values{"token": {e.Tokens["bob"]}}); status != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("sign-in without the form's token: %d, want 403", status)
	}
	if status, _, _ := anon.post("/signin", url.Values{"token": {e.Tokens["bob"]}, "csrf": {strings.Repeat("x", 32)}}); status != http.StatusForbidden {
		t.Errorf("sign-in with a token but no cookie: %d, want 403", status)
	}
	jar, _ := cookiejar.New(nil)
	anon.c.Jar = jar
	_, form, _ := anon.get("/signin")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in form: %s", form)
	}
	anon.csrf = m[1]
	if status, body, _ := anon.post("/signin", url.Values{"token": {"duet_pat_wrong"}}); status != http.StatusUnauthorized || !strings.Contains(body, "invalid or expired token") {
		t.Errorf("sign-in with a wrong token: %d", status)
	}
	e.App.Audit.Flush()
	if recs, _ := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Method: "signIn", Outcome: duet.CodePermissionDenied}); len(recs) != 2 {
		t.Errorf("the refused sign-ins were audited %d times, want 2", len(recs))
	}
	// Signing out ends the session on the server.
	alice.post("/signout", nil)
	if status, _, _ := alice.get("/tasks"); status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want a redirect to sign in", status)
	}
}

// TestConsoleActions: a task shared with team:NAME shows it; bob approves a
// case that calls a server with his credentials for the places the page
// shows, and is asked again when they change; a queued run is cancelled
// from its page; an administrator's audit page shows everyone's records; a
// token is shown once.
func TestConsoleActions(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	e.RegisterOrders("alice")
	e.RegisterOrders("bob")
	alice := signIn(t, e, "alice")
	_, _, resp := alice.post("/tasks/apply", url.Values{"source": {apptest.OrdersSuite("plain", "http://127.0.0.1:9", "", "https://collector.example/in")}})
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	alice.post("/teams", url.Values{"name": {"qa"}})
	if status, body, _ := alice.post(taskPath+"/share", url.Values{"with": {"team:qa"}}); status != http.StatusSeeOther {
		t.Fatalf("share with team:qa: %d %s", status, body)
	}
	// bob, in the team, sees the task and approves the version of its case
	// he reviewed.
	alice.post("/teams/qa/members", url.Values{"user": {"bob"}})
	bob := signIn(t, e, "bob")
	_, body, _ := bob.get(taskPath)
	casePath := regexp.MustCompile(`href="(/cases/case_[0-9a-z]+)"`).FindStringSubmatch(body)
	if casePath == nil {
		t.Fatalf("bob, a member of team qa, does not see the task shared with it: %.300s", body)
	}
	_, body, _ = bob.get(casePath[1])
	if !strings.Contains(body, `id="approve"`) {
		t.Fatalf("bob's case page offers no approval")
	}
	for _, want := range []string{"list_orders", "host collector.example", "host 127.0.0.1:9 (the task&#39;s base URL"} {
		if !strings.Contains(body, want) {
			t.Errorf("bob's case page does not show %q", want)
		}
	}
	shown := regexp.MustCompile(`name="destinations" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if shown == nil {
		t.Fatalf("the approval form does not name the destinations it shows")
	}
	if status, _, _ := bob.post(casePath[1]+"/approve", url.Values{"version": {"1"}}); status == http.StatusSeeOther {
		t.Fatalf("an approval that names no destinations was taken")
	}
	if status, body, _ := bob.post(casePath[1]+"/approve", url.Values{"version": {"1"}, "destinations": {shown[1]}}); status != http.StatusSeeOther {
		t.Fatalf("approve %s: %d %.300s", casePath[1], status, body)
	}
	if _, body, _ := bob.get(casePath[1]); !strings.Contains(body, "You approved version 1") {
		t.Errorf("the approval is not shown")
	}
	// alice moves the task: the page asks bob again, and a form showing
	// the old places approves nothing.
	alice.post("/tasks/apply", url.Values{"source": {apptest.OrdersSuite("plain", "http://127.0.0.1:10", "team:qa", "https://collector.example/in")}})
	if _, body, _ := bob.get(casePath[1]); !strings.Contains(body, "needs your approval again") || !strings.Contains(body, "host 127.0.0.1:10") {
		t.Errorf("bob's case page after the base URL changed: %.1500s", body)
	}
	if status, _, _ := bob.post(casePath[1]+"/approve", url.Values{"version": {"1"}, "destinations": {shown[1]}}); status == http.StatusSeeOther {
		t.Errorf("an approval of the old places was taken")
	}
	if _, body, _ := alice.get(taskPath); !regexp.MustCompile(`id="task-shares">team:qa<`).MatchString(body) {
		t.Errorf("the task page does not show the team share")
	}
	_, _, resp = alice.post(taskPath+"/runs", nil)
	runPath := resp.Header.Get("Location")
	status, _, resp := alice.post(runPath+"/cancel", nil)
	if status != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "done=cancelled") {
		t.Fatalf("cancel: %d %s", status, resp.Header.Get("Location"))
	}
	if _, body, _ := alice.get(resp.Header.Get("Location")); !strings.Contains(body, `badge cancelled">cancelled<`) || !strings.Contains(body, "Cancelled.") {
		t.Errorf("the run page after cancel: %.400s", body)
	}
	status, _, _ = alice.post("/tokens", url.Values{"name": {"ci"}, "expiresInDays": {"7"}})
	_, body, _ = alice.get("/tokens")
	m := regexp.MustCompile(`id="new-token">(duet_pat_[a-z0-9]+)<`).FindStringSubmatch(body)
	if status != http.StatusSeeOther || m == nil {
		t.Fatalf("create a token: %d", status)
	}
	if _, body, _ := alice.get("/tokens"); strings.Contains(body, m[1]) {
		t.Errorf("the token is shown again")
	}
	e.App.Audit.Flush()
	root := signIn(t, e, "root")
	if _, body, _ := root.get("/audit?user=alice"); !strings.Contains(body, "administrator") || !strings.Contains(body, "<td>alice</td>") {
		t.Errorf("the administrator's audit page lacks alice's records")
	}
	if _, body, _ := alice.get("/audit"); strings.Contains(body, "<td>root</td>") {
		t.Errorf("alice's audit page shows root's records")
	}
}

// TestConsoleBehindSSOProxy: with DUET_SSO_USER_HEADER and DUET_SSO_SECRET
// the proxy's user is signed in at once (a session for its CSRF token);
// without the secret the header means nothing.
func TestConsoleBehindSSOProxy(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, map[string]string{"DUET_SSO_USER_HEADER": "X-Forwarded-User", "DUET_SSO_SECRET": "proxy-secret-0123456789"})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, secret string, form url.Values) (int, string) {
		req, _ := http.NewRequest(method, e.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-User", "dana")
		if secret != "" {
			req.Header.Set("X-Duet-Proxy-Secret", secret)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, _ := do("GET", "/tasks", "", nil); status != http.StatusSeeOther {
		t.Fatalf("the user header without the secret: %d, want a redirect to sign in", status)
	}
	status, body := do("GET", "/tokens", "proxy-secret-0123456789", nil)
	if status != 200 || !strings.Contains(body, `id="whoami">dana<`) {
		t.Fatalf("through the proxy: %d", status)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)[1]
	if status, _ := do("POST", "/tokens", "proxy-secret-0123456789", url.Values{"name": {"x"}, "csrf": {csrf}}); status != http.StatusSeeOther {
		t.Fatalf("a change through the proxy with the CSRF token: %d", status)
	}
	if status, _ := do("POST", "/tokens", "proxy-secret-0123456789", url.Values{"name": {"y"}}); status != http.StatusForbidden {
		t.Fatalf("a change through the proxy without the CSRF token: %d", status)
	}
	if status, _ := do("GET", "/tokens", "wrong-secret-0123456789", nil); status == 200 {
		t.Fatalf("a wrong proxy secret was accepted")
	}
}

// TestSignInNextStaysLocal: the page the sign-in returns to (next) is a
// path of this site as a browser reads it — a browser drops tabs and
// newlines and reads "\" as "/", so "/\t/evil.example" would be
// "//evil.example", another site (an open redirect).
func TestSignInNextStaysLocal(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	c, _ := e.SignIn("alice")
	u, _ := url.Parse(e.URL)
	for _, next := range []string{"/%09/evil.example", "/%0A/evil.example", "/%0D/evil.example", "/%5C/evil.example", "/%5Cevil.example",
		"//evil.example", "/%20/evil.example", "https://evil.example", "/%00/evil.example", "/%E2%80%A8/evil.example"} {
		req, _ := http.NewRequest("GET", e.URL+"/signin?next="+next, nil)
		for _, ck := range c.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // as it is: Go's client refuses such a Location, a browser does not
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/tasks" {
			t.Errorf("next=%s: %d Location %q, want /tasks", next, resp.StatusCode, loc)
		}
	}
	req, _ := http.NewRequest("GET", e.URL+"/signin?next=/runs%3Fstatus%3Dfailed", nil)
	for _, ck := range c.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	if resp, err := http.DefaultTransport.RoundTrip(req); err != nil || resp.Header.Get("Location") != "/runs?status=failed" {
		t.Fatalf("a local next: %v %v", resp.Header.Get("Location"), err)
	}
}

// TestConsoleToolArgumentsRefused: arguments the console's tool form
// refuses (read as strictly as a REST body) never reach the server, and
// the refusal is audited once, as the user, from the web.
func TestConsoleToolArgumentsRefused(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	if status, body, _ := alice.post("/servers", url.Values{"name": {"orders"}, "url": {e.OrderURL}, "bearerToken": {e.OrderToken}}); status != http.StatusSeeOther {
		t.Fatalf("register: %d %s", status, body)
	}
	if status, body, _ := alice.post("/servers/orders/tools/query_order", url.Values{}); status != http.StatusBadRequest || !strings.Contains(body, "orderId is required") {
		t.Fatalf("a required argument missing: %d %.500s", status, body)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Method: "callTool", Outcome: duet.CodeInvalidArgument})
	if err != nil || len(recs) != 1 || recs[0].CallSource != duet.SourceWeb {
		t.Fatalf("the refusal is audited once: %+v %v", recs, err)
	}
	if inv, _ := e.App.Store.FindInvocations(t.Context(), duet.InvocationFilter{Executor: "alice"}); len(inv) != 0 {
		t.Fatalf("the refused call reached the server: %+v", inv)
	}
}

// TestConsoleQueryStrict: a page reads its query string as strictly as the
// REST API reads its own — unknown, repeated or malformed parameters and
// numbers that are not whole are refused with INVALID_ARGUMENT before the
// page runs, and each refusal is audited once, as the user, from the web.
func TestConsoleQueryStrict(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	alice.post("/assets", url.Values{"kind": {"rule"}, "name": {"no-prod"}, "body": {"x"}})
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {"task: {name: shop, baseURL: 'http://127.0.0.1:9'}\ncases:\n  - title: t\n    steps:\n      - assert: 1 == 1\n"}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	refused := []string{
		"/tasks?q=a&q=b",                         // repeated
		"/tasks?qq=shop",                         // unknown
		"/tasks?q=%zz",                           // malformed
		taskPath + "?cursor=x",                   // a page that reads no query
		taskPath + "/trends?runs=ten",            // not a number
		taskPath + "/trends?runs=-1",             // negative
		"/assets/rule/alice/no-prod?version=1.5", // not whole
		"/audit?view=audit&view=invocations",     // repeated
		"/runs?status=passed&includeDrafts=1",    // unknown
	}
	for _, p := range refused {
		status, body, _ := alice.get(p)
		if status != http.StatusBadRequest || !strings.Contains(body, "INVALID_ARGUMENT") {
			t.Errorf("%s: %d, want 400 INVALID_ARGUMENT: %.300s", p, status, body)
		}
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Outcome: duet.CodeInvalidArgument, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if strings.HasPrefix(r.Method, "http GET ") && r.CallSource == duet.SourceWeb {
			n++
		}
	}
	if n != len(refused) {
		t.Errorf("%d refusals audited, want %d: %+v", n, len(refused), recs)
	}
}
