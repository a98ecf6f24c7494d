package api_test

import (
	"crypto/rand"
	"encoding/json"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/postgres/pgtest"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/vault"
)

// TestRESTAnswersAsDocumented calls every operation of the OpenAPI
// document, as alice, with real data (a suite applied, the sample order
// MCP server registered, runs executed) and checks each answer against the
// document: status, content type, schema. Then bob, who owns nothing,
// calls every route that names one of alice's things and gets NOT_FOUND
// (or an empty list), and cannot read her records.
func TestRESTAnswersAsDocumented(t *testing.T) {
	t.Parallel()
	testREST(t, nil)
}

// TestRESTOnPostgres is TestRESTAnswersAsDocumented on PostgreSQL (a
// fresh schema of DUET_TEST_POSTGRES_URL).
func TestRESTOnPostgres(t *testing.T) {
	t.Parallel()
	key := make([]byte, vault.KeySize)
	rand.Read(key)
	testREST(t, map[string]string{"DUET_DATABASE_URL": pgtest.URL(t), "DUET_MASTER_KEY": vault.EncodeKey(key)})
}

func testREST(t *testing.T, vars map[string]string) {
	e := apptest.New(t, vars)
	_, ops := loadDoc(t, e)
	seen := map[string]bool{}
	do := func(user, id string, params map[string]string, body any, hdr ...string) []byte {
		t.Helper()
		return check(t, e, ops, seen, user, id, params, body, "", hdr...)
	}
	refused := func(user, id string, params map[string]string, body any, want duet.Code, hdr ...string) {
		t.Helper()
		check(t, e, ops, seen, user, id, params, body, want, hdr...)
	}
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	me := decode[api.Me](t, do("alice", "getMe", nil, nil))
	if me.User != "alice" || me.Admin {
		t.Fatalf("getMe: %+v", me)
	}
	applied := decode[duet.ApplyResult](t, do("alice", "createOrUpdateTasks", nil, api.ApplyIn{Source: apptest.Suite("plain")}))
	taskID := applied.Task.ID
	tasks := decode[catalog.ListTasksOut](t, do("alice", "listTasks", p("?", "query=plain"), nil))
	if tasks.Total != 1 || tasks.Tasks[0].ID != taskID {
		t.Fatalf("listTasks: %+v", tasks)
	}
	do("alice", "getTask", p("taskId", taskID), nil)
	if src := decode[api.SuiteSourceOut](t, do("alice", "getSuiteSource", p("taskId", taskID), nil)); src.Source != apptest.Suite("plain") {
		t.Fatalf("getSuiteSource: %+v", src)
	}
	if v := decode[api.Validation](t, do("alice", "validateSuite", nil, api.ValidateIn{Source: apptest.Suite("plain")})); !v.Valid {
		t.Fatalf("validateSuite of a valid suite: %+v", v)
	}
	cases := decode[catalog.ListCasesOut](t, do("alice", "listCases", p("taskId", taskID), nil))
	caseID := cases.Cases[0].ID
	got := decode[catalog.GetCaseOut](t, do("alice", "getCase", p("caseId", caseID), nil))
	if !strings.Contains(got.Case.Source, "1 + 1") {
		t.Fatalf("getCase: %+v", got)
	}
	if vs := decode[api.CaseVersions](t, do("alice", "listCaseVersions", p("caseId", caseID, "?", "from=1&to=1"), nil)); len(vs.Versions) != 1 || vs.Diff == nil || vs.Diff.Added+vs.Diff.Removed != 0 {
		t.Fatalf("listCaseVersions: %+v", vs)
	}
	if v := decode[duet.CaseVersion](t, do("alice", "getCaseVersion", p("caseId", caseID, "version", "1"), nil)); v.Source != got.Case.Source || v.Via != duet.SavedByApply {
		t.Fatalf("getCaseVersion: %+v", v)
	}
	if ap := decode[api.Approval](t, do("alice", "getCaseApproval", p("caseId", caseID), nil)); ap.Needed || ap.Author != "alice" {
		t.Fatalf("alice's own case needs no approval: %+v", ap)
	}
	if ap := decode[api.Approval](t, do("alice", "createCaseApproval", p("caseId", caseID), api.ApprovalIn{Version: 1})); ap.Approval == nil || ap.Approval.Version != 1 {
		t.Fatalf("createCaseApproval: %+v", ap)
	}
	refused("alice", "createCaseApproval", p("caseId", caseID), api.ApprovalIn{Version: 7}, duet.CodeConflict)
	sh := decode[api.Sharing](t, do("alice", "shareTask", p("taskId", taskID), api.ShareIn{With: "carol"}))
	if !slices.Contains(sh.SharedWith, "carol") {
		t.Fatalf("shareTask: %+v", sh)
	}
	do("alice", "unshareTask", p("taskId", taskID, "principal", "carol"), nil)

	// Schedules: made as alice (her runs, her credentials), listed with
	// their next fire times, paused, resumed, removed; bob sees none.
	sc := decode[api.ScheduleView](t, do("alice", "createSchedule", nil, api.ScheduleIn{TaskID: taskID, Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Paris", Overlap: "queue"}))
	if sc.Owner != "alice" || sc.Source != "user" || sc.NextFireAt == nil || len(sc.NextFires) != 3 || sc.Overlap != "queue" || sc.Missed != "skip" {
		t.Fatalf("createSchedule: %+v", sc)
	}
	refused("alice", "createSchedule", nil, api.ScheduleIn{TaskID: taskID, Every: "10s"}, duet.CodeInvalidArgument)
	refused("bob", "createSchedule", nil, api.ScheduleIn{TaskID: taskID, Every: "1h"}, duet.CodeNotFound)
	if l := decode[api.ScheduleList](t, do("alice", "listSchedules", p("?", "taskId="+taskID), nil)); len(l.Schedules) != 1 || l.Schedules[0].ID != sc.ID {
		t.Fatalf("listSchedules: %+v", l)
	}
	if l := decode[api.ScheduleList](t, do("bob", "listSchedules", nil, nil)); len(l.Schedules) != 0 {
		t.Fatalf("bob's listSchedules: %+v", l)
	}
	do("alice", "getSchedule", p("scheduleId", sc.ID), nil)
	if v := decode[api.ScheduleView](t, do("alice", "pauseSchedule", p("scheduleId", sc.ID), nil)); !v.Paused || v.NextFireAt != nil {
		t.Fatalf("pauseSchedule: %+v", v)
	}
	if v := decode[api.ScheduleView](t, do("alice", "resumeSchedule", p("scheduleId", sc.ID), nil)); v.Paused || v.NextFireAt == nil {
		t.Fatalf("resumeSchedule: %+v", v)
	}
	do("alice", "deleteSchedule", p("scheduleId", sc.ID), nil)

	// Webhooks: the task's owner only; the secret shown once; a URL the
	// network guard refuses is refused when the webhook is made.
	hook := decode[api.WebhookView](t, do("alice", "createWebhook", nil, api.WebhookIn{TaskID: taskID, Name: "chat", URL: "http://127.0.0.1:9/hook", On: "always"}))
	if !strings.HasPrefix(hook.Secret, "whsec_") || hook.On != "always" || !slices.Equal(hook.Events, []string{"run.finished", "case.broken"}) {
		t.Fatalf("createWebhook: %+v", hook)
	}
	refused("alice", "createWebhook", nil, api.WebhookIn{TaskID: taskID, Name: "private", URL: "http://10.1.2.3/hook"}, duet.CodeURLRefused)
	refused("alice", "createWebhook", nil, api.WebhookIn{TaskID: taskID, Name: "bad", URL: "http://127.0.0.1:9/", Events: []string{"run.started"}}, duet.CodeInvalidArgument)
	refused("bob", "createWebhook", nil, api.WebhookIn{TaskID: taskID, Name: "bobs", URL: "http://127.0.0.1:9/"}, duet.CodeNotFound)
	if l := decode[api.WebhookList](t, do("alice", "listWebhooks", p("taskId", taskID), nil)); len(l.Webhooks) != 1 || l.Webhooks[0].Secret != "" {
		t.Fatalf("listWebhooks: %+v", l)
	}
	refused("bob", "listWebhooks", p("taskId", taskID), nil, duet.CodeNotFound)
	if v := decode[api.WebhookView](t, do("alice", "getWebhook", p("webhookId", hook.ID), nil)); v.Secret != "" || v.URL != hook.URL {
		t.Fatalf("getWebhook: %+v", v)
	}
	if v := decode[api.WebhookView](t, do("alice", "updateWebhook", p("webhookId", hook.ID), map[string]any{"disabled": true})); !v.Disabled {
		t.Fatalf("updateWebhook: %+v", v)
	}
	if v := decode[api.WebhookView](t, do("alice", "rotateWebhookSecret", p("webhookId", hook.ID), nil)); v.Secret == "" || v.Secret == hook.Secret {
		t.Fatalf("rotateWebhookSecret: %+v", v)
	}
	if l := decode[api.DeliveryList](t, do("alice", "listWebhookDeliveries", p("webhookId", hook.ID), nil)); len(l.Deliveries) != 0 {
		t.Fatalf("listWebhookDeliveries: %+v", l)
	}
	refused("alice", "redeliverWebhook", p("deliveryId", "dlv_none"), nil, duet.CodeNotFound)
	do("alice", "deleteWebhook", p("webhookId", hook.ID), nil)

	// Vault secrets: values written, never read back; alice's own; an
	// administrator lists and removes anyone's but sets no one else's.
	const value = "s3cr3t-v4lue-42"
	if set := decode[api.SecretSet](t, do("alice", "setSecret", nil, api.SecretIn{Name: "SHOP_PW", Value: value})); set.Action != "created" {
		t.Fatalf("setSecret: %+v", set)
	}
	refused("alice", "setSecret", nil, api.SecretIn{Name: "1bad", Value: "x"}, duet.CodeInvalidArgument)
	listed := do("alice", "listSecrets", nil, nil)
	if l := decode[api.SecretList](t, listed); len(l.Secrets) != 1 || l.Secrets[0].Name != "SHOP_PW" || strings.Contains(string(listed), value) {
		t.Fatalf("listSecrets: %s", listed)
	}
	refused("bob", "listSecrets", p("?", "user=alice"), nil, duet.CodePermissionDenied)
	if l := decode[api.SecretList](t, do("root", "listSecrets", p("?", "user=alice"), nil)); len(l.Secrets) != 1 {
		t.Fatalf("root's listSecrets of alice: %+v", l)
	}
	refused("bob", "deleteSecret", p("name", "SHOP_PW", "?", "user=alice"), nil, duet.CodePermissionDenied)
	do("alice", "deleteSecret", p("name", "SHOP_PW"), nil)
	refused("alice", "deleteSecret", p("name", "SHOP_PW"), nil, duet.CodeNotFound)
	e.App.Audit.Flush() // read audit is written in batches
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Method: "setSecret"})
	if err != nil || len(recs) == 0 { // the refused one is written in a later batch
		t.Fatalf("setSecret's audit: %+v %v", recs, err)
	}
	for _, r := range recs {
		if b, _ := json.Marshal(r); strings.Contains(string(b), value) {
			t.Fatalf("the audit holds the value: %s", b)
		}
	}
	if al := decode[api.AlertList](t, do("alice", "listContractAlerts", p("taskId", taskID), nil)); len(al.Alerts) != 0 || al.Broken != 0 {
		t.Fatalf("listContractAlerts: %+v", al)
	}

	// MCP: register the order server (credentials once), sync, call by hand.
	reg := decode[api.ServerDetail](t, do("alice", "createServer", nil, api.RegisterIn{Name: "orders", URL: e.OrderURL, Credentials: api.Credentials{BearerToken: e.OrderToken}}))
	if reg.Server.Status != "synced" || len(reg.Tools) == 0 || !slices.Contains(reg.Server.HeaderNames, "Authorization") {
		t.Fatalf("createServer: %+v", reg)
	}
	do("alice", "listServers", nil, nil)
	detail := do("alice", "getServer", p("server", "orders"), nil)
	if strings.Contains(string(detail), e.OrderToken) {
		t.Fatalf("getServer returned the credential: %s", detail)
	}
	do("alice", "syncServer", p("server", reg.Server.ServerKey), nil)
	if d := decode[api.CatalogDiff](t, do("alice", "diffServer", p("server", "orders"), nil)); d.From != nil || len(d.Changes) != 0 || d.Server != "orders" {
		t.Fatalf("diffServer of an unchanged catalog: %+v", d)
	}
	called := decode[api.CallOut](t, do("alice", "callTool", p("server", "orders", "tool", "query_order"), api.CallIn{Arguments: map[string]any{"orderId": "A1001"}}))
	if called.Error != nil || called.Result == nil || called.Invocation == nil || called.Invocation.Source != duet.SourceAPI || called.Invocation.Outcome != duet.OutcomeOK {
		t.Fatalf("callTool: %+v", called)
	}
	inv := decode[api.InvocationList](t, do("alice", "listInvocations", p("?", "tool=query_order"), nil))
	if len(inv.Records) != 1 || inv.Records[0].Executor != "alice" {
		t.Fatalf("listInvocations: %+v", inv)
	}

	// Runs: start (idempotent), execute, follow, report, cancel another.
	key := "Idempotency-Key"
	start := decode[catalog.StartRunOut](t, do("alice", "createRun", nil, api.RunIn{TaskID: taskID}, key, "k1"))
	again := decode[catalog.StartRunOut](t, do("alice", "createRun", nil, api.RunIn{TaskID: taskID}, key, "k1"))
	if again.RunID != start.RunID || !again.Replayed {
		t.Fatalf("createRun retried: %+v, want %s replayed", again, start.RunID)
	}
	refused("alice", "createRun", nil, api.RunIn{TaskID: taskID}, duet.CodeInvalidArgument) // no key
	if ok, err := e.App.Worker.ExecuteRun(t.Context(), start.RunID); !ok || err != nil {
		t.Fatalf("executing the run: %v %v", ok, err)
	}
	run := decode[catalog.GetRunOut](t, do("alice", "getRun", p("runId", start.RunID), nil))
	if run.Run.Status != duet.StatusPassed || len(run.Executions) != 1 {
		t.Fatalf("getRun: %+v", run)
	}
	// A passing case keeps no trace under the default, on-failure.
	refused("alice", "getTrace", p("runId", start.RunID, "case", run.Executions[0].ID), nil, duet.CodeNotFound)
	refused("alice", "getTraceVideo", p("runId", start.RunID, "case", run.Executions[0].ID), nil, duet.CodeNotFound)
	list := decode[api.RunList](t, do("alice", "listRuns", p("?", "taskId="+taskID), nil))
	if len(list.Runs) != 1 || list.Total != 1 || list.Runs[0].TaskName != "plain" {
		t.Fatalf("listRuns: %+v", list)
	}
	events, data := sse(do("alice", "followRun", p("runId", start.RunID), nil))
	if len(events) < 2 || events[0] != "progress" || events[len(events)-1] != "end" {
		t.Fatalf("followRun events: %v", events)
	}
	if pr := decode[api.Progress](t, []byte(data[0])); !pr.Run.Done || pr.Run.Status != duet.StatusPassed || pr.Run.TaskName != "plain" {
		t.Fatalf("followRun progress: %+v", pr)
	}
	html := do("alice", "getReport", p("runId", start.RunID), nil)
	if !strings.Contains(string(html), "sums add up") {
		t.Fatalf("getReport: %s", html)
	}
	for _, f := range []string{"json", "junit"} {
		b := do("alice", "getReport", p("runId", start.RunID, "?", "format="+f+"&download=1"), nil)
		if !strings.Contains(string(b), start.RunID) {
			t.Fatalf("getReport %s: %s", f, b)
		}
	}
	do("alice", "getExecution", p("executionId", run.Executions[0].ID), nil)
	if ex := decode[report.Exit](t, do("alice", "getRunExit", p("runId", start.RunID, "?", "failOnFlaky=true"), nil)); ex.Code != report.ExitPassed {
		t.Fatalf("getRunExit: %+v", ex)
	}
	second := decode[catalog.StartRunOut](t, do("alice", "createRun", nil, api.RunIn{TaskID: taskID}, key, "k2"))
	refused("alice", "getRunExit", p("runId", second.RunID), nil, duet.CodeConflict) // queued: no verdict yet
	cancelled := decode[api.RunSummary](t, do("alice", "cancelRun", p("runId", second.RunID), nil))
	if cancelled.Status != duet.StatusCancelled || cancelled.TaskName != "plain" {
		t.Fatalf("cancelRun: %+v", cancelled)
	}
	if ex := decode[report.Exit](t, do("alice", "getRunExit", p("runId", second.RunID), nil)); ex.Code != report.ExitFailed {
		t.Fatalf("getRunExit of a cancelled run: %+v", ex)
	}
	tr := decode[api.Trends](t, do("alice", "getTrends", p("taskId", taskID), nil))
	if len(tr.Runs) != 1 || len(tr.Cases) != 1 || tr.Cases[0].PassRate != 1 {
		t.Fatalf("getTrends: %+v", tr)
	}

	// Teams: create, members, the dependency list, register from it.
	do("alice", "createTeam", nil, api.TeamIn{Name: "qa"})
	do("alice", "addTeamMember", p("team", "qa"), api.MemberIn{User: "carol"})
	do("alice", "setTeamRole", p("team", "qa", "user", "carol"), api.RoleIn{Role: duet.RoleMaintainer})
	do("alice", "removeTeamMember", p("team", "qa", "user", "carol"), nil)
	do("alice", "listTeams", nil, nil)
	do("alice", "addTeamServer", p("team", "qa"), api.TeamServerIn{From: "orders", Description: "order lookups"})
	team := decode[api.TeamDetail](t, do("alice", "getTeam", p("team", "qa"), nil))
	if len(team.Servers) != 1 || strings.Contains(mustJSON(team), e.OrderToken) {
		t.Fatalf("getTeam: %+v", team)
	}

	// Assets.
	saved := decode[api.AssetSaved](t, do("alice", "createAsset", nil, api.AssetIn{Kind: duet.AssetSkill, Name: "checkout", Body: "Pay with the test card."}))
	if saved.Action != duet.ApplyCreated || saved.Asset.Version != 1 {
		t.Fatalf("createAsset: %+v", saved)
	}
	v2 := decode[api.AssetSaved](t, do("alice", "createAsset", nil, api.AssetIn{Kind: duet.AssetSkill, Name: "checkout", Body: "Pay with the other card."}))
	if v2.Asset.Version != 2 {
		t.Fatalf("a new version: %+v", v2)
	}
	do("alice", "listAssets", nil, nil)
	old := decode[duet.Asset](t, do("alice", "getAsset", p("kind", "skill", "owner", "alice", "name", "checkout", "?", "version=1"), nil))
	if old.Body != "Pay with the test card." {
		t.Fatalf("getAsset v1: %+v", old)
	}
	do("alice", "shareAsset", p("kind", "skill", "owner", "alice", "name", "checkout"), api.AssetShareIn{SharedWith: []string{"carol"}})

	// Tokens.
	tok := decode[api.TokenCreated](t, do("alice", "createToken", nil, api.TokenIn{Name: "ci", ExpiresInDays: 7}))
	if !strings.HasPrefix(tok.Secret, "duet_pat_") || tok.Token.ExpiresAt == nil {
		t.Fatalf("createToken: %+v", tok)
	}
	if toks := do("alice", "listTokens", nil, nil); strings.Contains(string(toks), tok.Secret) {
		t.Fatalf("listTokens shows a token's value: %s", toks)
	}

	// The operations the command line needed beside the console's (a task
	// by its name, too).
	if src := decode[api.TaskCases](t, do("alice", "listCaseSources", p("taskId", "plain"), nil)); src.TaskID != taskID {
		t.Fatalf("listCaseSources by name: %+v", src)
	}
	if ts := decode[api.TaskServers](t, do("alice", "listTaskServers", p("taskId", taskID), nil)); ts.TaskID != taskID {
		t.Fatalf("listTaskServers: %+v", ts)
	}
	do("alice", "getPostRun", p("taskId", taskID), nil)
	refused("alice", "approvePostRun", p("taskId", taskID), api.PostRunApprovalIn{}, duet.CodeInvalidArgument) // it has none
	do("alice", "listApprovals", nil, nil)
	do("alice", "revokeCaseApproval", p("caseId", caseID), nil) // she approved nothing: nothing to withdraw, no error
	do("alice", "listStopRequests", nil, nil)
	refused("alice", "decideStop", p("requestId", "stop_none"), api.StopDecisionIn{Approve: true}, duet.CodeNotFound)
	refused("alice", "loginServer", p("server", "orders"), api.LoginIn{}, duet.CodeInvalidArgument) // static headers: nothing to log in to
	if _, err := exec.LookPath("adb"); err == nil {
		do("alice", "listDevices", nil, nil)
	} else {
		refused("alice", "listDevices", nil, nil, duet.CodeBrowserUnavailable)
	}
	refused("alice", "generateCase", nil, api.GenerateIn{TaskID: taskID}, duet.CodeLLMNotConfigured)
	do("alice", "listGenerations", nil, nil)

	// Baselines: alice's, as her runs recorded them.
	first, cand := baselines(t, e, taskID, caseID)
	if bl := decode[api.BaselineList](t, do("alice", "listBaselines", p("?", "status=pending&taskId="+taskID), nil)); len(bl.Baselines) != 2 {
		t.Fatalf("listBaselines: %+v", bl)
	}
	if bd := decode[api.BaselineDetail](t, do("alice", "getBaseline", p("baselineId", cand.ID), nil)); bd.Current == nil || bd.Current.ID != first.ID || bd.DiffRatio == nil || *bd.DiffRatio != 1 {
		t.Fatalf("getBaseline: %+v", bd)
	}
	do("alice", "getBaselineImage", p("baselineId", cand.ID, "?", "which=diff"), nil)
	refused("alice", "getBaselineImage", p("baselineId", first.ID, "?", "which=diff"), nil, duet.CodeNotFound)
	do("alice", "approveBaseline", p("baselineId", cand.ID), nil)
	refused("alice", "approveBaseline", p("baselineId", cand.ID), nil, duet.CodeConflict)
	do("alice", "rejectBaseline", p("baselineId", first.ID), nil)

	// Secrets: alice's, by name; the value is never answered back.
	const secretValue = "s3cret-canary-4f1e"
	if set := decode[api.SecretSet](t, do("alice", "setSecret", nil, api.SecretIn{Name: "SHOP_PASSWORD", Value: secretValue})); set.Name != "SHOP_PASSWORD" || set.Action != duet.ApplyCreated {
		t.Fatalf("setSecret: %+v", set)
	}
	refused("alice", "setSecret", nil, api.SecretIn{Name: "bad name", Value: "x"}, duet.CodeInvalidArgument)
	if b := do("alice", "listSecrets", nil, nil); !strings.Contains(string(b), "SHOP_PASSWORD") || strings.Contains(string(b), secretValue) {
		t.Fatalf("listSecrets: %s", b)
	}
	if b := do("bob", "listSecrets", nil, nil); strings.Contains(string(b), "SHOP_PASSWORD") {
		t.Fatalf("bob's listSecrets shows alice's: %s", b)
	}
	refused("bob", "deleteSecret", p("name", "SHOP_PASSWORD"), nil, duet.CodeNotFound)
	do("alice", "deleteSecret", p("name", "SHOP_PASSWORD"), nil)
	refused("alice", "deleteSecret", p("name", "SHOP_PASSWORD"), nil, duet.CodeNotFound)

	// Bob owns nothing: every route that names alice's things answers
	// NOT_FOUND, exactly as for a thing that does not exist, and his lists
	// are empty.
	nf := duet.CodeNotFound
	refused("bob", "getTask", p("taskId", taskID), nil, nf)
	refused("bob", "listCases", p("taskId", taskID), nil, nf)
	refused("bob", "getCase", p("caseId", caseID), nil, nf)
	refused("bob", "getCaseApproval", p("caseId", caseID), nil, nf)
	refused("bob", "listCaseVersions", p("caseId", caseID), nil, nf)
	refused("bob", "getCaseVersion", p("caseId", caseID, "version", "1"), nil, nf)
	refused("bob", "createCaseApproval", p("caseId", caseID), api.ApprovalIn{Version: 1}, nf)
	refused("bob", "getTrends", p("taskId", taskID), nil, nf)
	refused("bob", "listTransfers", p("taskId", taskID), nil, nf)
	refused("bob", "shareTask", p("taskId", taskID), api.ShareIn{With: "bob"}, nf)
	refused("bob", "unshareTask", p("taskId", taskID, "principal", "carol"), nil, nf)
	refused("bob", "transferTask", p("taskId", taskID), api.TransferIn{To: "bob"}, nf)
	refused("bob", "createRun", nil, api.RunIn{TaskID: taskID}, nf, key, "b1")
	refused("bob", "getRun", p("runId", start.RunID), nil, nf)
	refused("bob", "cancelRun", p("runId", start.RunID), nil, nf)
	refused("bob", "followRun", p("runId", start.RunID), nil, nf)
	refused("bob", "getReport", p("runId", start.RunID), nil, nf)
	refused("bob", "getTrace", p("runId", start.RunID, "case", run.Executions[0].ID), nil, nf)
	refused("bob", "getTraceVideo", p("runId", start.RunID, "case", run.Executions[0].ID), nil, nf)
	refused("bob", "getBaseline", p("baselineId", cand.ID), nil, nf)
	refused("bob", "getBaselineImage", p("baselineId", cand.ID), nil, nf)
	refused("bob", "approveBaseline", p("baselineId", cand.ID), nil, nf)
	refused("bob", "rejectBaseline", p("baselineId", cand.ID), nil, nf)
	// The AI steps' cache: alice's case has no acting step, so no plan to
	// list or freeze; bob neither reads nor clears alice's.
	if pl := decode[api.AIPlanList](t, do("alice", "listCaseAIPlans", p("caseId", caseID), nil)); len(pl.Plans) != 0 {
		t.Fatalf("listCaseAIPlans: %+v", pl)
	}
	refused("alice", "freezeCase", p("caseId", caseID), nil, duet.CodeInvalidArgument)
	if cl := decode[api.ClearAIPlansOut](t, do("alice", "clearAIPlans", nil, api.ClearAIPlansIn{TaskID: taskID})); cl.Cleared != 0 {
		t.Fatalf("clearAIPlans: %+v", cl)
	}
	refused("bob", "listCaseAIPlans", p("caseId", caseID), nil, nf)
	refused("bob", "freezeCase", p("caseId", caseID), nil, nf)
	refused("bob", "clearAIPlans", nil, api.ClearAIPlansIn{TaskID: taskID}, nf)
	refused("bob", "getExecution", p("executionId", run.Executions[0].ID), nil, nf)
	refused("bob", "getServer", p("server", reg.Server.ServerKey), nil, nf)
	refused("bob", "syncServer", p("server", "orders"), nil, nf)
	refused("bob", "callTool", p("server", reg.Server.ServerKey, "tool", "query_order"), api.CallIn{Arguments: map[string]any{"orderId": "A1001"}}, nf)
	refused("bob", "deleteServer", p("server", "orders"), nil, nf)
	refused("bob", "getAsset", p("kind", "skill", "owner", "alice", "name", "checkout"), nil, nf)
	refused("bob", "shareAsset", p("kind", "skill", "owner", "alice", "name", "checkout"), api.AssetShareIn{SharedWith: []string{"bob"}}, nf)
	refused("bob", "deleteAsset", p("kind", "skill", "owner", "alice", "name", "checkout"), nil, nf)
	refused("bob", "getTeam", p("team", "qa"), nil, nf)
	refused("bob", "addTeamMember", p("team", "qa"), api.MemberIn{User: "bob"}, nf)
	refused("bob", "addTeamServer", p("team", "qa"), api.TeamServerIn{From: "orders"}, nf)
	refused("bob", "registerTeamServer", p("team", "qa", "name", "orders"), api.TeamRegisterIn{URL: e.OrderURL, Credentials: api.Credentials{BearerToken: "x"}}, nf)
	refused("bob", "setTeamRole", p("team", "qa", "user", "bob"), api.RoleIn{Role: duet.RoleOwner}, nf)
	refused("bob", "deleteTeam", p("team", "qa"), nil, nf)
	refused("bob", "revokeToken", p("tokenId", tok.Token.ID), nil, nf)
	refused("bob", "listAudit", p("?", "user=alice"), nil, duet.CodePermissionDenied)
	refused("bob", "listInvocations", p("?", "user=alice"), nil, duet.CodePermissionDenied)
	for id, body := range map[string]string{
		"listTasks": string(do("bob", "listTasks", nil, nil)), "listRuns": string(do("bob", "listRuns", nil, nil)),
		"listServers": string(do("bob", "listServers", nil, nil)), "listAssets": string(do("bob", "listAssets", nil, nil)),
		"listTeams": string(do("bob", "listTeams", nil, nil)), "listTokens": string(do("bob", "listTokens", nil, nil)),
		"listAudit": string(do("bob", "listAudit", nil, nil)), "listInvocations": string(do("bob", "listInvocations", nil, nil)),
	} {
		for _, secret := range []string{taskID, start.RunID, reg.Server.ServerKey, "checkout", `"alice"`, `"qa"`, "team:qa", tok.Token.ID} {
			if strings.Contains(body, secret) {
				t.Errorf("bob's %s shows alice's %s: %s", id, secret, body)
			}
		}
	}
	// An administrator sees everyone's records.
	e.App.Audit.Flush()
	all := decode[api.AuditList](t, do("root", "listAudit", p("?", "user=alice&limit=1000"), nil))
	if !slices.ContainsFunc(all.Records, func(r *duet.AuditRecord) bool { return r.Caller == "alice" && r.CallSource == duet.SourceAPI }) {
		t.Fatalf("root's audit lacks alice's API calls: %+v", all)
	}

	// The rest: hand the task to the team, register from the dependency
	// list, and delete what was made.
	do("alice", "transferTask", p("taskId", taskID), api.TransferIn{To: "team:qa"})
	if trs := decode[api.Transfers](t, do("alice", "listTransfers", p("taskId", taskID), nil)); len(trs.Transfers) != 1 || trs.Transfers[0].To != "team:qa" {
		t.Fatalf("listTransfers: %+v", trs)
	}
	do("alice", "deleteServer", p("server", "orders"), nil)
	again2 := decode[api.ServerDetail](t, do("alice", "registerTeamServer", p("team", "qa", "name", "orders"), api.TeamRegisterIn{URL: e.OrderURL, Credentials: api.Credentials{BearerToken: e.OrderToken}}))
	if again2.Server.ServerKey != reg.Server.ServerKey || again2.Server.Status != "synced" {
		t.Fatalf("registerTeamServer: %+v", again2)
	}
	do("alice", "removeTeamServer", p("team", "qa", "name", "orders"), nil)
	do("alice", "transferTask", p("taskId", taskID), api.TransferIn{To: "alice"})
	do("alice", "deleteTeam", p("team", "qa"), nil)
	do("alice", "deleteAsset", p("kind", "skill", "owner", "alice", "name", "checkout"), nil)
	do("alice", "revokeToken", p("tokenId", tok.Token.ID), nil)
	e.App.Audit.Flush()
	audit := decode[api.AuditList](t, do("alice", "listAudit", p("?", "source=api&limit=1000"), nil))
	for _, r := range audit.Records {
		if r.Caller != "alice" || r.CallSource != duet.SourceAPI {
			t.Fatalf("alice's audit: %+v", r)
		}
	}
	methods := map[string]bool{}
	for _, r := range audit.Records {
		methods[r.Method+" "+r.Tool] = true
	}
	for _, m := range []string{"tools/call start_test_run", "tools/call list_test_tasks", "registerServer ", "callTool ", "applySuite ", "createToken ", "approveBaseline " + cand.ID, "rejectBaseline " + first.ID} {
		if !methods[m] {
			t.Errorf("no audit record of %q among %v", m, methods)
		}
	}

	for id := range ops {
		if !seen[id] {
			t.Errorf("documented operation %s was not called", id)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var _ = url.QueryEscape

// TestReportStopsAtTheResultLimit: a report over DUET_MAX_RESULT_BYTES is
// refused with TOO_LARGE (413) as it is written, not rendered whole first.
func TestReportStopsAtTheResultLimit(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, map[string]string{"DUET_MAX_RESULT_BYTES": "8192"})
	status, body, _ := e.Call("alice", "POST", api.Prefix+"/tasks", api.ApplyIn{Source: apptest.Suite("plain")})
	if status != 200 && status != 201 {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskID := decode[duet.ApplyResult](t, body).Task.ID
	status, body, _ = e.Call("alice", "POST", api.Prefix+"/runs", api.RunIn{TaskID: taskID}, "Idempotency-Key", "k")
	if status != 201 && status != 200 {
		t.Fatalf("start: %d %s", status, body)
	}
	runID := decode[catalog.StartRunOut](t, body).RunID
	if ok, err := e.App.Worker.ExecuteRun(t.Context(), runID); !ok || err != nil {
		t.Fatalf("executing the run: %v %v", ok, err)
	}
	status, body, _ = e.Call("alice", "GET", api.Prefix+"/runs/"+runID+"/report", nil)
	if status != 413 || !strings.Contains(string(body), "while it was being written") {
		t.Fatalf("an HTML report over the limit: %d %.300s, want 413 stopped while written", status, body)
	}
	if status, body, _ = e.Call("alice", "GET", api.Prefix+"/runs/"+runID+"/report?format=junit", nil); status != 200 {
		t.Fatalf("the JUnit report, within the limit: %d %.300s", status, body)
	}
}
