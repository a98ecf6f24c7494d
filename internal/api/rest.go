package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/report"
)

// Prefix is where the REST API lives.
const Prefix = "/api/v1"

// Codes gives the HTTP status of an error code (httpapi.Codes: the one
// table).
type Codes interface{ Status(duet.Code) int }

// Options configure the REST handler.
type Options struct {
	// MaxBodyBytes limits a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// Codes maps error codes to HTTP statuses; nil answers every error 500.
	Codes Codes
	// Version is the server version the OpenAPI document names.
	Version string
}

// Handler serves the REST API over a Service.
type Handler struct {
	svc    *Service
	opts   Options
	routes []*route
	doc    func() []byte // the OpenAPI document, made when first asked for
}

// param is a path, query or header parameter.
type param struct {
	name, in, desc string
	typ            string // string, integer, boolean
	required       bool
	// min and max bound an integer (max 0: no upper bound); maxLen bounds
	// a string (0: none). A route backed by a catalog tool takes them from
	// the tool's input schema (NewHandler), so REST and MCP share them.
	min, max, maxLen int
}

func path(name, desc string) param {
	return param{name: name, in: "path", desc: desc, typ: "string", required: true}
}
func query(name, desc string) param { return param{name: name, in: "query", desc: desc, typ: "string"} }

// queryInt is an integer query parameter from min to max (max 0: no upper
// bound, or the catalog tool's own).
func queryInt(name, desc string, min, max int) param {
	return param{name: name, in: "query", desc: desc, typ: "integer", min: min, max: max}
}

// bounds says what a parameter accepts, as its refusals say it.
func (p param) bounds() string {
	switch {
	case p.typ == "integer" && p.max > 0:
		return fmt.Sprintf("%s must be %d–%d", p.name, p.min, p.max)
	case p.typ == "integer":
		return fmt.Sprintf("%s must be a whole number from %d", p.name, p.min)
	case p.maxLen > 0:
		return fmt.Sprintf("%s must be at most %d characters", p.name, p.maxLen)
	}
	return ""
}

// check refuses a value the parameter does not accept. Returns
// INVALID_ARGUMENT.
func (p param) check(v string) error {
	switch p.typ {
	case "integer":
		n, err := strconv.Atoi(v)
		if err != nil || n < p.min || (p.max > 0 && n > p.max) {
			return bad(duet.Errorf(duet.CodeInvalidArgument, "%s (got %.40q)", p.bounds(), v))
		}
	case "boolean":
		if v != "true" && v != "false" {
			return bad(duet.Errorf(duet.CodeInvalidArgument, "%s must be true or false (got %.40q)", p.name, v))
		}
	default:
		if p.maxLen > 0 && utf8.RuneCountInString(v) > p.maxLen {
			return bad(duet.Errorf(duet.CodeInvalidArgument, "%s (got %d)", p.bounds(), utf8.RuneCountInString(v)))
		}
	}
	return nil
}

// route is one operation: how it is called, documented and served.
type route struct {
	method, path, id, summary, tag string
	params                         []param
	header                         *param // a required request header (Idempotency-Key)
	body                           reflect.Type
	out                            reflect.Type
	outSchema                      any // a schema to use instead of out's (the catalog tools' own)
	status                         int
	ctype                          string // a response that is not JSON (text/html, text/event-stream, ...)
	serve                          func(h *Handler, w http.ResponseWriter, r *http.Request, c duet.Caller) (any, error)
	// location, when set, is the address of what a 201 created (the
	// Location header).
	location func(out any) string
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// op builds a JSON operation with request body In (Empty: none) and
// response Out. Its success status follows the method: 201 Created for a
// POST that creates (an id starting with "create"), 204 No Content for a
// DELETE (no body), else 200.
func op[In, Out any](method, p, id, tag, summary string, fn func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in In) (Out, error), params ...param) *route {
	rt := &route{method: method, path: p, id: id, tag: tag, summary: summary, params: params, out: typeOf[Out](), status: http.StatusOK}
	if typeOf[In]() != typeOf[Empty]() {
		rt.body = typeOf[In]()
	}
	switch {
	case method == http.MethodPost && rt.body != nil && strings.HasPrefix(id, "create"):
		rt.status = http.StatusCreated
	case method == http.MethodDelete:
		rt.status, rt.out = http.StatusNoContent, nil
	}
	rt.serve = func(h *Handler, w http.ResponseWriter, r *http.Request, c duet.Caller) (any, error) {
		var in In
		if rt.body != nil {
			if err := h.decode(w, r, &in); err != nil {
				return nil, bad(err)
			}
		}
		return fn(r.Context(), h.svc, c, r, in)
	}
	return rt
}

// byID is an op without a body on what the last parameter of its path p
// names (get, pause, delete it, ...): fn is the Service method that takes
// that parameter; desc documents it.
func byID[Out any](method, p, id, tag, summary, desc string, fn func(*Service, context.Context, duet.Caller, string) (Out, error)) *route {
	return byIDWith(method, p, id, tag, summary, desc, func(s *Service, ctx context.Context, c duet.Caller, v string, _ Empty) (Out, error) {
		return fn(s, ctx, c, v)
	})
}

// byIDWith is byID with a request body In: fn takes the last parameter
// of p, then the body.
func byIDWith[In, Out any](method, p, id, tag, summary, desc string, fn func(*Service, context.Context, duet.Caller, string, In) (Out, error)) *route {
	name := lastParam(p)
	return op(method, p, id, tag, summary, func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in In) (Out, error) {
		return fn(s, ctx, c, r.PathValue(name), in)
	}, path(name, desc))
}

// byIDInt is byID with a whole-number query parameter q: fn takes the
// last parameter of p, then q's value (0 when absent; one out of q's
// bounds is refused).
func byIDInt[Out any](method, p, id, tag, summary, desc string, q param, fn func(*Service, context.Context, duet.Caller, string, int) (Out, error)) *route {
	name := lastParam(p)
	return op(method, p, id, tag, summary, func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (Out, error) {
		n, err := intParam(r, q.name)
		if err != nil {
			var zero Out
			return zero, err
		}
		return fn(s, ctx, c, r.PathValue(name), n)
	}, path(name, desc), q)
}

// byIDs is an op without a body on what the two parameters of its path p
// name (a team and a member, ...): fn takes them; desc1 and desc2
// document them.
func byIDs[Out any](method, p, id, tag, summary, desc1, desc2 string, fn func(*Service, context.Context, duet.Caller, string, string) (Out, error)) *route {
	return byIDsWith(method, p, id, tag, summary, desc1, desc2, func(s *Service, ctx context.Context, c duet.Caller, v1, v2 string, _ Empty) (Out, error) {
		return fn(s, ctx, c, v1, v2)
	})
}

// byIDsWith is byIDs with a request body In: fn takes the two parameters,
// then the body.
func byIDsWith[In, Out any](method, p, id, tag, summary, desc1, desc2 string, fn func(*Service, context.Context, duet.Caller, string, string, In) (Out, error)) *route {
	names := pathParams(p)
	n1, n2 := names[len(names)-2], names[len(names)-1]
	return op(method, p, id, tag, summary, func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in In) (Out, error) {
		return fn(s, ctx, c, r.PathValue(n1), r.PathValue(n2), in)
	}, path(n1, desc1), path(n2, desc2))
}

// lastParam is the name of the last parameter of path p.
func lastParam(p string) string {
	names := pathParams(p)
	return names[len(names)-1]
}

// pathParams are the names of the parameters of path p, in order.
func pathParams(p string) []string {
	var names []string
	for {
		i := strings.Index(p, "{")
		if i < 0 {
			return names
		}
		j := i + strings.Index(p[i:], "}")
		names = append(names, p[i+1:j])
		p = p[j+1:]
	}
}

// withBody is the handler of an op whose input is the request's body
// alone: the Service method fn, which takes it.
func withBody[In, Out any](fn func(*Service, context.Context, duet.Caller, In) (Out, error)) func(context.Context, *Service, duet.Caller, *http.Request, In) (Out, error) {
	return func(ctx context.Context, s *Service, c duet.Caller, _ *http.Request, in In) (Out, error) {
		return fn(s, ctx, c, in)
	}
}

// noInput is the handler of an op that takes nothing but the caller: the
// Service method fn.
func noInput[Out any](fn func(*Service, context.Context, duet.Caller) (Out, error)) func(context.Context, *Service, duet.Caller, *http.Request, Empty) (Out, error) {
	return func(ctx context.Context, s *Service, c duet.Caller, _ *http.Request, _ Empty) (Out, error) {
		return fn(s, ctx, c)
	}
}

// routes is the REST API, in documentation order.
func routes() []*route {
	return append(append(append(coreRoutes(), evidenceRoutes()...), opsRoutes()...), aiCacheRoutes()...) // ops.go
}

func coreRoutes() []*route {
	return []*route{
		op("GET", Prefix+"/me", "getMe", "account", "Who you are and your role",
			noInput((*Service).Me)),

		// Tasks and cases.
		withSchema(op("GET", Prefix+"/tasks", "listTasks", "tasks", "List the tasks you can access (list_test_tasks)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (catalog.ListTasksOut, error) {
				limit, err := intParam(r, "limit")
				if err != nil {
					return catalog.ListTasksOut{}, err
				}
				q := r.URL.Query()
				return s.ListTasks(ctx, c, catalog.ListTasksIn{Query: q.Get("query"), Owner: q.Get("owner"), Cursor: q.Get("cursor"), Limit: limit})
			}, query("query", "text to find in a task's name or description"), query("owner", "only tasks of this owner"),
			query("cursor", "nextCursor of the previous page"), queryInt("limit", "page size (default 20)", 1, 0)), catalog.ToolListTasks),
		located(op("POST", Prefix+"/tasks", "createOrUpdateTasks", "tasks", "Apply a suite (YAML): create or update a task and its cases, owned by you",
			withBody((*Service).ApplySuite)),
			func(out *duet.ApplyResult) string { return Prefix + "/tasks/" + url.PathEscape(out.Task.ID) }),
		op("POST", Prefix+"/tasks/validate", "validateSuite", "tasks", "Check a suite (YAML) as createOrUpdateTasks would, storing nothing: its problems, each at its line and column",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in ValidateIn) (Validation, error) {
				return s.ValidateSuite(ctx, c, ApplyIn{Source: in.Source})
			}),
		withSchema(byID("GET", Prefix+"/tasks/{taskId}", "getTask", "tasks", "Get a task (get_test_task)", "the task's id", (*Service).GetTask), catalog.ToolGetTask),
		op("GET", Prefix+"/tasks/{taskId}/source", "getSuiteSource", "tasks", "The YAML your task was last applied from, to edit and apply again",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (SuiteSourceOut, error) {
				return s.GetSuiteSource(ctx, c, r.PathValue("taskId"))
			}, path("taskId", "the task's id")),
		byIDWith("POST", Prefix+"/tasks/{taskId}/shares", "shareTask", "tasks", "Share your task with a user or team:NAME", "the task's id", (*Service).ShareTask),
		byIDs("DELETE", Prefix+"/tasks/{taskId}/shares/{principal}", "unshareTask", "tasks", "Stop sharing your task with a user or team:NAME", "the task's id", "a user id or team:NAME", (*Service).UnshareTask),
		byIDWith("POST", Prefix+"/tasks/{taskId}/transfer", "transferTask", "tasks", "Hand your task to another user or a team", "the task's id", (*Service).TransferTask),
		byID("GET", Prefix+"/tasks/{taskId}/transfers", "listTransfers", "tasks", "A task's transfer history", "the task's id", (*Service).ListTransfers),
		withSchema(op("GET", Prefix+"/tasks/{taskId}/cases", "listCases", "tasks", "List a task's cases (list_test_cases)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (catalog.ListCasesOut, error) {
				limit, err := intParam(r, "limit")
				if err != nil {
					return catalog.ListCasesOut{}, err
				}
				return s.ListCases(ctx, c, catalog.ListCasesIn{TaskID: r.PathValue("taskId"), IncludeDrafts: r.URL.Query().Get("includeDrafts") == "true",
					Cursor: r.URL.Query().Get("cursor"), Limit: limit})
			}, path("taskId", "the task's id"), param{name: "includeDrafts", in: "query", typ: "boolean", desc: "also list drafts"},
			query("cursor", "nextCursor of the previous page"), queryInt("limit", "page size (default 50)", 1, 0)), catalog.ToolListCases),
		op("GET", Prefix+"/tasks/{taskId}/trends", "getTrends", "tasks", "A task's run history: pass rate and duration per run and per case, flaky cases flagged",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (Trends, error) {
				n, err := intParam(r, "runs")
				if err != nil {
					return Trends{}, err
				}
				return s.Trends(ctx, c, r.PathValue("taskId"), TrendsIn{Runs: n})
			}, path("taskId", "the task's id"), queryInt("runs", "how many of the latest finished runs (default 30)", 1, maxTrendRuns)),
		byID("GET", Prefix+"/tasks/{taskId}/alerts", "listContractAlerts", "tasks", "Cases an MCP tool they call changed under: broken by a dependency change, or changed compatibly, with the difference", "the task's id", (*Service).ContractAlerts),
		withSchema(byID("GET", Prefix+"/cases/{caseId}", "getCase", "tasks", "Get a case with its YAML and compiled steps (get_test_case)", "the case's id", (*Service).GetCase), catalog.ToolGetCase),
		op("GET", Prefix+"/cases/{caseId}/versions", "listCaseVersions", "tasks", "A case's saved versions, newest first, and the line diff between two of them (from and to)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (CaseVersions, error) {
				in := CaseVersionsIn{Cursor: r.URL.Query().Get("cursor")}
				for name, dst := range map[string]*int{"from": &in.From, "to": &in.To, "limit": &in.Limit} {
					n, err := intParam(r, name)
					if err != nil {
						return CaseVersions{}, err
					}
					*dst = n
				}
				return s.ListCaseVersions(ctx, c, r.PathValue("caseId"), in)
			}, path("caseId", "the case's id"), queryInt("from", "the older version of the diff", 1, 0), queryInt("to", "the newer version of the diff", 1, 0),
			query("cursor", "nextCursor of the previous page"), queryInt("limit", "page size (default 50)", 1, MaxCaseVersionsPage)),
		op("GET", Prefix+"/cases/{caseId}/versions/{version}", "getCaseVersion", "tasks", "One saved version of a case, with its YAML",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (*duet.CaseVersion, error) {
				v, err := strconv.Atoi(r.PathValue("version"))
				if err != nil || v < 1 {
					return nil, bad(duet.Errorf(duet.CodeInvalidArgument, "version: want a whole number from 1, got %.40q", r.PathValue("version")))
				}
				return s.GetCaseVersion(ctx, c, r.PathValue("caseId"), v)
			}, path("caseId", "the case's id"), param{name: "version", in: "path", desc: "the version's number", typ: "integer", required: true, min: 1}),
		byID("GET", Prefix+"/cases/{caseId}/approval", "getCaseApproval", "tasks", "Whether you approved the current version of a case someone else wrote", "the case's id", (*Service).GetApproval),
		located(byIDWith("POST", Prefix+"/cases/{caseId}/approval", "createCaseApproval", "tasks", "Approve the version of a case you reviewed: its calls to tools that are not read-only may then use your credentials", "the case's id", (*Service).ApproveCase),
			func(out Approval) string { return Prefix + "/cases/" + url.PathEscape(out.CaseID) + "/approval" }),

		// Runs.
		op("GET", Prefix+"/runs", "listRuns", "runs", "List runs of the tasks you can access, newest first",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (RunList, error) {
				limit, err := intParam(r, "limit")
				if err != nil {
					return RunList{}, err
				}
				q := r.URL.Query()
				return s.ListRuns(ctx, c, RunListIn{TaskID: q.Get("taskId"), Status: duet.RunStatus(q.Get("status")), Branch: q.Get("branch"), Commit: q.Get("commit"), Cursor: q.Get("cursor"), Limit: limit})
			}, query("taskId", "only runs of this task"), query("status", "queued, running, passed, failed, error or cancelled"),
			query("branch", "only runs whose origin (the CI job) has this branch"), query("commit", "only runs whose origin has this commit"),
			query("cursor", "nextCursor of the previous page"), queryInt("limit", "page size (default 20)", 1, maxRunsPage)),
		located(withHeader(withSchema(op("POST", Prefix+"/runs", "createRun", "runs", "Start a run (start_test_run); the Idempotency-Key header makes retries safe",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in RunIn) (catalog.StartRunOut, error) {
				return s.StartRunFrom(ctx, c, catalog.StartRunIn{TaskID: in.TaskID, CaseIDs: in.CaseIDs, Device: in.Device, Environment: in.Environment, Trace: in.Trace, IdempotencyKey: r.Header.Get("Idempotency-Key"),
					Retries: in.Retries, Tags: in.Tags, ExcludeTags: in.ExcludeTags, Grep: in.Grep}, in.Origin)
			}), catalog.ToolStartRun), param{name: "Idempotency-Key", in: "header", typ: "string", required: true,
			desc: "a key you choose (a UUID, say); a retry with the same key and body returns the first run (replayed: true), other arguments IDEMPOTENCY_CONFLICT"}),
			func(out catalog.StartRunOut) string { return Prefix + "/runs/" + url.PathEscape(out.RunID) }),
		withSchema(op("GET", Prefix+"/runs/{runId}", "getRun", "runs", "Get a run with a page of its executions (get_test_run)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (catalog.GetRunOut, error) {
				limit, err := intParam(r, "limit")
				if err != nil {
					return catalog.GetRunOut{}, err
				}
				return s.GetRun(ctx, c, catalog.GetRunIn{RunID: r.PathValue("runId"), Cursor: r.URL.Query().Get("cursor"), Limit: limit})
			}, path("runId", "the run's id"), query("cursor", "nextCursor of the previous page of executions"), queryInt("limit", "executions per page (default 200)", 1, 0)), catalog.ToolGetRun),
		op("GET", Prefix+"/runs/{runId}/exit", "getRunExit", "runs", "The exit code of a finished run for a CI job: 0 passed, 1 failures, 2 usage or configuration, 3 infrastructure (what duet run --wait exits with)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (report.Exit, error) {
				return s.RunExit(ctx, c, r.PathValue("runId"), RunExitIn{FailOnFlaky: r.URL.Query().Get("failOnFlaky") == "true"})
			}, path("runId", "the run's id"), param{name: "failOnFlaky", in: "query", typ: "boolean", desc: "a flaky case (passed on a retry) counts as a failure"}),
		byID("POST", Prefix+"/runs/{runId}/cancel", "cancelRun", "runs", "Cancel a run", "the run's id", (*Service).CancelRun),
		{method: "GET", path: Prefix + "/runs/{runId}/events", id: "followRun", tag: "runs", status: http.StatusOK, ctype: "text/event-stream",
			summary: "Follow a run live: server-sent events named progress, each a JSON Progress, until the run ends",
			params:  []param{path("runId", "the run's id")}, out: typeOf[Progress](), serve: (*Handler).followRun},
		{method: "GET", path: Prefix + "/runs/{runId}/report", id: "getReport", tag: "runs", status: http.StatusOK, ctype: "text/html",
			summary: "The run's report: HTML (screenshots inline), JSON or JUnit XML",
			params: []param{path("runId", "the run's id"), query("format", "html (default), json or junit"),
				query("cursor", "the next part of a run of more than 500 cases (the Duet-Report-Next-Cursor header of the previous part)"),
				queryInt("limit", "cases per part (default 500)", 1, 1000),
				query("attachments", "zip, with format=junit: the JUnit XML and its failed cases' screenshots and traces (yours only) in one zip, named in system-out as [[ATTACHMENT|path]]"),
				{name: "download", in: "query", typ: "string", desc: "present (any value): served as a file to save"}}, serve: (*Handler).report},
		withSchema(byID("GET", Prefix+"/executions/{executionId}", "getExecution", "runs", "Get one case execution with its steps (get_execution_result)", "the execution's id", (*Service).GetExecution), catalog.ToolGetExecutionResult),

		// Schedules.
		op("GET", Prefix+"/schedules", "listSchedules", "schedules", "The schedules of the tasks you can access, with their next fire times",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (ScheduleList, error) {
				return s.ListSchedules(ctx, c, ScheduleListIn{TaskID: r.URL.Query().Get("taskId")})
			}, query("taskId", "only the schedules of this task")),
		op("POST", Prefix+"/schedules", "createSchedule", "schedules", "Schedule runs of a task (cron in a time zone, or every), run as you with your credentials",
			withBody((*Service).CreateSchedule)),
		byID("GET", Prefix+"/schedules/{scheduleId}", "getSchedule", "schedules", "One schedule with its next fire times", "the schedule's id", (*Service).GetSchedule),
		byID("POST", Prefix+"/schedules/{scheduleId}/pause", "pauseSchedule", "schedules", "Pause a schedule (yours, or one of your task's)", "the schedule's id", (*Service).PauseSchedule),
		byID("POST", Prefix+"/schedules/{scheduleId}/resume", "resumeSchedule", "schedules", "Resume a schedule from its next slot to come", "the schedule's id", (*Service).ResumeSchedule),
		byID("DELETE", Prefix+"/schedules/{scheduleId}", "deleteSchedule", "schedules", "Remove a schedule made by hand (a suite's goes with the suite)", "the schedule's id", (*Service).RemoveSchedule),

		// Vault secrets (write-only values).
		op("GET", Prefix+"/secrets", "listSecrets", "secrets", "Your vault secrets (${secrets.NAME}): names and times, never values; an administrator may name another user",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (SecretList, error) {
				return s.ListSecrets(ctx, c, r.URL.Query().Get("user"))
			}, query("user", "another user's (administrators only)")),
		op("POST", Prefix+"/secrets", "setSecret", "secrets", "Create or replace one of your secrets; the value is sealed and never returned",
			withBody((*Service).SetSecret)),
		op("DELETE", Prefix+"/secrets/{name}", "deleteSecret", "secrets", "Remove one of your secrets (an administrator: anyone's, with user)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (Empty, error) {
				return s.DeleteSecret(ctx, c, r.URL.Query().Get("user"), r.PathValue("name"))
			}, path("name", "the secret's name"), query("user", "another user's (administrators only)")),

		// Webhooks (the task's owner only).
		byID("GET", Prefix+"/tasks/{taskId}/webhooks", "listWebhooks", "webhooks", "The webhooks of a task you own (never their secrets)", "the task's id", (*Service).ListWebhooks),
		located(op("POST", Prefix+"/webhooks", "createWebhook", "webhooks", "Send a task's events (a run's end, a case broken by a tool change) to a URL, signed; the answer shows the signing secret once",
			withBody((*Service).CreateWebhook)),
			func(out WebhookView) string { return Prefix + "/webhooks/" + url.PathEscape(out.ID) }),
		byID("GET", Prefix+"/webhooks/{webhookId}", "getWebhook", "webhooks", "One webhook of a task you own", "the webhook's id", (*Service).GetWebhook),
		byIDWith("PATCH", Prefix+"/webhooks/{webhookId}", "updateWebhook", "webhooks", "Change a webhook's URL, events, on, format, or disable it", "the webhook's id", (*Service).UpdateWebhook),
		byID("POST", Prefix+"/webhooks/{webhookId}/secret", "rotateWebhookSecret", "webhooks", "Give a webhook a new signing secret, shown once", "the webhook's id", (*Service).RotateWebhookSecret),
		byID("DELETE", Prefix+"/webhooks/{webhookId}", "deleteWebhook", "webhooks", "Remove a webhook and its deliveries", "the webhook's id", (*Service).DeleteWebhook),
		byIDInt("GET", Prefix+"/webhooks/{webhookId}/deliveries", "listWebhookDeliveries", "webhooks", "A webhook's deliveries, newest first: status, attempts, response code, next retry",
			"the webhook's id", queryInt("limit", "at most this many (default 100)", 1, 500), (*Service).ListDeliveries),
		byID("POST", Prefix+"/webhooks/deliveries/{deliveryId}/redeliver", "redeliverWebhook", "webhooks", "Send a delivered or failed delivery again (a new delivery, the same body)", "the delivery's id", (*Service).Redeliver),

		// MCP servers.
		op("GET", Prefix+"/servers", "listServers", "mcp", "Your registered MCP servers",
			noInput((*Service).ListServers)),
		located(op("POST", Prefix+"/servers", "createServer", "mcp", "Register an MCP server (credentials sent once, never returned) and archive its tools",
			withBody((*Service).RegisterServer)),
			func(out ServerDetail) string { return Prefix + "/servers/" + url.PathEscape(out.Server.Name) }),
		byID("GET", Prefix+"/servers/{server}", "getServer", "mcp", "One of your servers with its archived tools and their schemas", "the server's name or serverKey", (*Service).GetServer),
		byID("POST", Prefix+"/servers/{server}/sync", "syncServer", "mcp", "Archive the server's tool catalog again", "the server's name or serverKey", (*Service).SyncServer),
		byIDInt("GET", Prefix+"/servers/{server}/diff", "diffServer", "mcp", "What changed between the server's current archived catalog and an earlier one",
			"the server's name or serverKey", queryInt("back", "which earlier catalog: 1 (default) the one the latest changing sync replaced", 1, duet.MaxCatalogHistory), (*Service).ServerDiff),
		byID("DELETE", Prefix+"/servers/{server}", "deleteServer", "mcp", "Remove your registration, its credential and its catalog", "the server's name or serverKey", (*Service).RemoveServer),
		byIDsWith("POST", Prefix+"/servers/{server}/tools/{tool}/call", "callTool", "mcp", "Call a tool by hand through the one invoke(), as you", "the server's name or serverKey", "the tool's name", (*Service).CallTool),
		op("GET", Prefix+"/invocations", "listInvocations", "audit", "Invocation records of calls to MCP servers (yours; everyone's for an administrator)",
			withRecords((*Service).ListInvocations), recordParams(true)...),

		// AI assets.
		op("GET", Prefix+"/assets", "listAssets", "assets", "The asset center: skills, rules and prompts you can read, and your MCP servers' tools",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (AssetList, error) {
				return s.ListAssets(ctx, c, AssetListIn{Kind: duet.AssetKind(r.URL.Query().Get("kind"))})
			}, query("kind", "skill, rule or prompt")),
		located(op("POST", Prefix+"/assets", "createAsset", "assets", "Create an asset, or a new version of yours",
			withBody((*Service).SaveAsset)),
			func(out AssetSaved) string {
				return Prefix + "/assets/" + url.PathEscape(string(out.Asset.Kind)) + "/" + url.PathEscape(out.Asset.Owner) + "/" + url.PathEscape(out.Asset.Name)
			}),
		op("GET", Prefix+"/assets/{kind}/{owner}/{name}", "getAsset", "assets", "An asset you can read, at its latest or a given version",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (*duet.Asset, error) {
				v, err := intParam(r, "version")
				if err != nil {
					return nil, err
				}
				return s.GetAsset(ctx, c, duet.AssetKind(r.PathValue("kind")), r.PathValue("owner")+"/"+r.PathValue("name"), v)
			}, path("kind", "skill, rule or prompt"), path("owner", "its owner"), path("name", "its name"), queryInt("version", "a version (default the latest)", 1, 0)),
		op("PUT", Prefix+"/assets/{kind}/{owner}/{name}/sharing", "shareAsset", "assets", "Replace whom your asset is shared with",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in AssetShareIn) (AssetSaved, error) {
				if r.PathValue("owner") != c.UserID {
					return AssetSaved{}, duet.Errorf(duet.CodeNotFound, "you have no %s named %q", r.PathValue("kind"), r.PathValue("name"))
				}
				return s.ShareAsset(ctx, c, duet.AssetKind(r.PathValue("kind")), r.PathValue("name"), in)
			}, path("kind", "skill, rule or prompt"), path("owner", "you"), path("name", "its name")),
		op("DELETE", Prefix+"/assets/{kind}/{owner}/{name}", "deleteAsset", "assets", "Delete your asset and its versions",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (Empty, error) {
				if r.PathValue("owner") != c.UserID {
					return Empty{}, duet.Errorf(duet.CodeNotFound, "you have no %s named %q", r.PathValue("kind"), r.PathValue("name"))
				}
				return s.DeleteAsset(ctx, c, duet.AssetKind(r.PathValue("kind")), r.PathValue("name"))
			}, path("kind", "skill, rule or prompt"), path("owner", "you"), path("name", "its name")),

		// Teams.
		op("GET", Prefix+"/teams", "listTeams", "teams", "The teams you are a member of",
			noInput((*Service).ListTeams)),
		located(op("POST", Prefix+"/teams", "createTeam", "teams", "Create a team",
			withBody((*Service).CreateTeam)),
			func(out *duet.Team) string { return Prefix + "/teams/" + url.PathEscape(out.Name) }),
		byID("GET", Prefix+"/teams/{team}", "getTeam", "teams", "A team with its members and MCP dependency list", "the team's name", (*Service).GetTeam),
		byIDWith("POST", Prefix+"/teams/{team}/members", "addTeamMember", "teams", "Add a member", "the team's name", (*Service).AddMember),
		byIDs("DELETE", Prefix+"/teams/{team}/members/{user}", "removeTeamMember", "teams", "Remove a member (or leave): a maintainer removes members, an owner anyone; a team keeps an owner", "the team's name", "the member", (*Service).RemoveMember),
		byIDsWith("POST", Prefix+"/teams/{team}/members/{user}/role", "setTeamRole", "teams", "Give a member a role: owner, maintainer or member (you must be an owner; a team keeps an owner)", "the team's name", "the member", (*Service).SetRole),
		byID("DELETE", Prefix+"/teams/{team}", "deleteTeam", "teams", "Delete a team with its dependency list and every share with it (you must be an owner; the team must own no task)", "the team's name", (*Service).DeleteTeam),
		byIDWith("POST", Prefix+"/teams/{team}/servers", "addTeamServer", "teams", "List one of your servers on the team's dependency list (address and tools, never credentials)", "the team's name", (*Service).AddTeamServer),
		byIDs("DELETE", Prefix+"/teams/{team}/servers/{name}", "removeTeamServer", "teams", "Remove a server from the dependency list", "the team's name", "the listed server", (*Service).RemoveTeamServer),
		byIDsWith("POST", Prefix+"/teams/{team}/servers/{name}/register", "registerTeamServer", "teams", "Register a listed server for yourself with your own credentials, pinned to the address you give (url)", "the team's name", "the listed server", (*Service).RegisterTeamServer),

		// Tokens and audit.
		op("GET", Prefix+"/tokens", "listTokens", "account", "Your personal access tokens (never their values)",
			noInput((*Service).ListTokens)),
		op("POST", Prefix+"/tokens", "createToken", "account", "Create a personal access token: its value is in this response only",
			withBody((*Service).CreateToken)),
		byID("DELETE", Prefix+"/tokens/{tokenId}", "revokeToken", "account", "Revoke one of your tokens and every token it created", "the token's id", (*Service).RevokeToken),
		op("GET", Prefix+"/audit", "listAudit", "audit", "Audit records of your calls through every door (everyone's for an administrator)",
			withRecords((*Service).ListAudit), recordParams(false)...),
	}
}

// RunIn starts a run (the idempotency key comes in the Idempotency-Key
// header).
type RunIn struct {
	TaskID  string   `json:"taskId"`
	CaseIDs []string `json:"caseIds,omitempty" jsonschema:"run only these cases (default: all active cases)"`
	Device  string   `json:"device,omitempty" jsonschema:"device for browser steps: a preset (desktop, iphone-15, ...), android:SERIAL, or PRESET@ws://... a remote browser's DevTools address"`
	// Environment is the task's environment to run in.
	Environment string `json:"environment,omitempty" jsonschema:"the task's environment to run in (its base URL and env variables); default: the task's default environment"`
	// Origin is the CI job starting the run (docs/ci.md).
	Origin *duet.RunOrigin `json:"origin,omitempty" jsonschema:"the CI job starting the run: commit, branch, pull request URL, pipeline URL"`
	Trace  string          `json:"trace,omitempty" jsonschema:"when the cases keep a trace: off, on-failure, on-first-retry or on (default: the task's)"`
	// The run's retries and the selection of its cases by tag and text
	// (start_test_run's).
	Retries     *int     `json:"retries,omitempty" jsonschema:"how many times each failed case runs again from its start, in place of the cases' own (0 for none)"`
	Tags        []string `json:"tags,omitempty" jsonschema:"run only the cases with at least one of these tags"`
	ExcludeTags []string `json:"excludeTags,omitempty" jsonschema:"leave out the cases with any of these tags"`
	Grep        string   `json:"grep,omitempty" jsonschema:"run only the cases whose title or key contains this text (case-insensitive)"`
}

func withSchema(rt *route, toolName string) *route {
	rt.outSchema = toolName
	return rt
}

func withHeader(rt *route, p param) *route {
	rt.header = &p
	return rt
}

// located gives a route that creates something the Location of what it
// created.
func located[Out any](rt *route, f func(Out) string) *route {
	rt.location = func(out any) string { return f(out.(Out)) }
	return rt
}

func recordParams(invocations bool) []param {
	ps := []param{query("user", "only this caller or executor (administrators only)"), query("tool", "only this tool"),
		query("source", "only this call source"), query("outcome", "OK or an error code"), query("traceId", "only this trace"),
		query("before", "only records older than this RFC 3339 time (the time of the last record of the previous page)"),
		query("since", "only records newer than this RFC 3339 time"),
		queryInt("limit", "page size (default 100)", 1, maxRecordsPage)}
	if invocations {
		return append(ps, query("server", "only calls to this serverKey"))
	}
	return append(ps, query("method", "only this MCP method or API operation"))
}

// withRecords is the handler of an op that lists records: the Service
// method fn with the query's RecordsIn (recordParams).
func withRecords[Out any](fn func(*Service, context.Context, duet.Caller, RecordsIn) (Out, error)) func(context.Context, *Service, duet.Caller, *http.Request, Empty) (Out, error) {
	return func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (Out, error) {
		in, err := recordsIn(r)
		if err != nil {
			var zero Out
			return zero, err
		}
		return fn(s, ctx, c, in)
	}
}

func recordsIn(r *http.Request) (RecordsIn, error) {
	q := r.URL.Query()
	in := RecordsIn{User: q.Get("user"), Tool: q.Get("tool"), Method: q.Get("method"), Server: q.Get("server"), Source: q.Get("source"),
		Outcome: q.Get("outcome"), TraceID: q.Get("traceId")}
	var err error
	if in.Limit, err = intParam(r, "limit"); err != nil {
		return in, err
	}
	if b := q.Get("before"); b != "" {
		if in.Before, err = time.Parse(time.RFC3339Nano, b); err != nil {
			return in, bad(duet.Errorf(duet.CodeInvalidArgument, "before: want an RFC 3339 time, got %.40q", b))
		}
	}
	if b := q.Get("since"); b != "" {
		if in.Since, err = time.Parse(time.RFC3339Nano, b); err != nil {
			return in, bad(duet.Errorf(duet.CodeInvalidArgument, "since: want an RFC 3339 time, got %.40q", b))
		}
	}
	return in, nil
}

// intParam reads an integer query parameter (0 when absent). Returns
// INVALID_ARGUMENT.
func intParam(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, bad(duet.Errorf(duet.CodeInvalidArgument, "%s: want a whole number, got %.40q", name, v))
	}
	return n, nil
}

// badInput marks an error of a request's input found before its
// operation ran: serve audits it (an operation audits its own outcome).
type badInput struct{ err error }

func (b *badInput) Error() string { return b.err.Error() }
func (b *badInput) Unwrap() error { return b.err }

func bad(err error) error { return &badInput{err} }

// checkQuery reads the query string once, strictly, as the route
// documents it: well-formed, only the parameters the route declares, each
// at most once, each within its documented bounds (integers whole numbers
// in their range, booleans true or false, strings no longer than their
// maxLength); and a required header is there. Returns INVALID_ARGUMENT.
func (rt *route) checkQuery(r *http.Request) error {
	if p := rt.header; p != nil {
		v := r.Header.Get(p.name)
		if v == "" && p.required {
			return bad(duet.Errorf(duet.CodeInvalidArgument, "the %s header is missing: %s", p.name, p.desc))
		}
		if err := p.check(v); err != nil {
			return err
		}
	}
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return bad(duet.Errorf(duet.CodeInvalidArgument, "the query string is malformed"))
	}
	for name, vs := range q {
		i := slices.IndexFunc(rt.params, func(p param) bool { return p.in == "query" && p.name == name })
		if i < 0 {
			return bad(duet.Errorf(duet.CodeInvalidArgument, "unknown query parameter %.60q (see %s/openapi.json)", name, Prefix))
		}
		if len(vs) > 1 {
			return bad(duet.Errorf(duet.CodeInvalidArgument, "query parameter %s is given %d times", name, len(vs)))
		}
		if vs[0] == "" && rt.params[i].typ != "string" {
			continue // an empty value is the default
		}
		if err := rt.params[i].check(vs[0]); err != nil {
			return err
		}
	}
	return nil
}

// NewHandler returns the REST API over svc.
func NewHandler(svc *Service, opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	h := &Handler{svc: svc, opts: opts, routes: routes()}
	for _, rt := range h.routes {
		h.toolBounds(rt)
	}
	// Made when first asked for: encoding every schema is most of what
	// making a handler costs (a third of the CPU of the API's tests went
	// to it), and a server may never be asked.
	h.doc = sync.OnceValue(func() []byte {
		doc, err := json.MarshalIndent(h.openAPI(), "", " ")
		if err != nil {
			panic("api: encoding the OpenAPI document: " + err.Error())
		}
		return doc
	})
	return h
}

// toolBounds gives the parameters of a route backed by a catalog tool the
// bounds of the tool's argument of the same name (a header's name in
// lowerCamelCase: Idempotency-Key is idempotencyKey): REST refuses what
// MCP refuses, in its own words.
func (h *Handler) toolBounds(rt *route) {
	name, ok := rt.outSchema.(string)
	if !ok {
		return
	}
	t, ok := h.svc.d.Catalog.Tool(name)
	if !ok {
		panic("api: " + rt.id + " names no tool " + name)
	}
	bound := func(p *param, arg string) {
		s := t.InputSchema.Properties[arg]
		if s == nil {
			return
		}
		if s.Minimum != nil {
			p.min = int(*s.Minimum)
		}
		if s.Maximum != nil {
			p.max = int(*s.Maximum)
		}
		if s.MaxLength != nil {
			p.maxLen = *s.MaxLength
		}
	}
	for i := range rt.params {
		if rt.params[i].in == "query" {
			bound(&rt.params[i], rt.params[i].name)
		}
	}
	if p := rt.header; p != nil {
		arg := strings.ReplaceAll(p.name, "-", "")
		bound(p, strings.ToLower(arg[:1])+arg[1:])
	}
}

// Register adds every route of the API to mux, each wrapped by authed
// (authentication, CSRF), and the OpenAPI document, which needs no
// credentials. A request for a path the API serves with a method it does
// not is answered 405 METHOD_NOT_ALLOWED with the methods it does in
// Allow; one for a path it does not serve, 404 NOT_FOUND.
func (h *Handler) Register(mux *http.ServeMux, authed func(http.Handler) http.Handler) {
	mux.HandleFunc("GET "+Prefix+"/openapi.json", h.OpenAPI)
	methods := map[string][]string{Prefix + "/openapi.json": {http.MethodGet}}
	for _, rt := range h.routes {
		mux.Handle(rt.method+" "+rt.path, authed(h.serve(rt)))
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	// The paths alone, each answering 405 with the methods it has: the
	// catch-all consults them, so that a path matches exactly as the
	// routes' patterns match it.
	known := http.NewServeMux()
	for p, ms := range methods {
		if slices.Contains(ms, http.MethodGet) {
			ms = append(ms, http.MethodHead)
		}
		slices.Sort(ms)
		allow := strings.Join(ms, ", ")
		known.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			h.WriteError(w, duet.Errorf(duet.CodeMethodNotAllowed, "%s is not allowed on %.200s: use %s (see %s/openapi.json)", r.Method, r.URL.Path, allow, Prefix))
		})
	}
	mux.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		if kh, pattern := known.Handler(r); pattern != "" {
			kh.ServeHTTP(w, r)
			return
		}
		h.WriteError(w, duet.Errorf(duet.CodeNotFound, "no such route: %s %.200s (see %s/openapi.json)", r.Method, r.URL.Path, Prefix))
	})
}

// OpenAPI serves the OpenAPI 3.1 document.
func (h *Handler) OpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(h.doc())
}

func (h *Handler) serve(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answers name private things (a new token's value, records,
		// credentials' names): no cache keeps them, no browser reads them
		// as anything but their type.
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		c, _ := duet.CallerFromContext(r.Context())
		out, err := any(nil), rt.checkQuery(r)
		if err == nil {
			out, err = rt.serve(h, w, r, c)
		}
		if err != nil {
			var bad *badInput
			if errors.As(err, &bad) {
				// Refused before the operation ran (it audits itself):
				// audited here, once.
				h.svc.Catalog().Refuse(catalog.Op{Caller: c, Method: rt.id}, err)
			}
			h.WriteError(w, err)
			return
		}
		if rt.ctype != "" {
			return // written by the route
		}
		if rt.status == http.StatusNoContent {
			w.WriteHeader(rt.status)
			return
		}
		b, err := MarshalJSON(out)
		if err != nil {
			h.WriteError(w, fmt.Errorf("api: encoding the answer of %s: %w", rt.id, err))
			return
		}
		if rt.location != nil && rt.status == http.StatusCreated {
			w.Header().Set("Location", rt.location(out))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rt.status)
		w.Write(append(b, '\n'))
	})
}

// wire are the options of every JSON answer: encoding/json's encoding
// (field names and omitempty as tagged, HTML escaped, map keys sorted),
// except that a nil slice is [] and a nil map {} — an answer never holds
// null where the document promises an array or an object.
var wire = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv2.FormatNilSliceAsNull(false), jsonv2.FormatNilMapAsNull(false))

// MarshalJSON encodes v as the REST API answers: a nil slice is [], a nil
// map {}, never null (the OpenAPI document types them as arrays and
// objects).
func MarshalJSON(v any) ([]byte, error) { return jsonv2.Marshal(v, wire) }

// WriteError writes err as {"error":{"code","message"}} with its status.
func (h *Handler) WriteError(w http.ResponseWriter, err error) {
	code := duet.ErrorCode(err)
	status := http.StatusInternalServerError
	if h.opts.Codes != nil {
		status = h.opts.Codes.Status(code)
	}
	WriteError(w, status, code, duet.ErrorMessage(err))
}

// WriteError writes an error response of the REST API.
func WriteError(w http.ResponseWriter, status int, code duet.Code, msg string) {
	switch code {
	case duet.CodeRateLimited:
		w.Header().Set("Retry-After", "1")
	case duet.CodeUnauthenticated:
		w.Header().Set("WWW-Authenticate", `Bearer realm="duet"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": ErrorBody{Code: code, Message: msg}})
}

// decode reads the JSON body into v once, strictly: one JSON value RFC
// 7493 accepts (UTF-8, no duplicate keys), member names matched exactly,
// unknown members refused, at most MaxBodyBytes. Returns INVALID_ARGUMENT,
// TOO_LARGE.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return duet.Errorf(duet.CodeTooLarge, "the body is over %d bytes", h.opts.MaxBodyBytes)
		}
		return duet.Errorf(duet.CodeInvalidArgument, "reading the body: %v", err)
	}
	if len(body) == 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "the request needs a JSON body")
	}
	return DecodeJSON(body, v, "the body")
}

// DecodeJSON reads JSON from outside (what names it in errors) into v
// the one way every door of the API and the console reads it: one JSON
// value RFC 7493 accepts (UTF-8, no duplicate keys), member names matched
// exactly, unknown members refused. Returns INVALID_ARGUMENT.
func DecodeJSON(data []byte, v any, what string) error {
	if !jsontext.Value(data).IsValid() {
		return duet.Errorf(duet.CodeInvalidArgument, "%s is not one valid JSON value (RFC 7493: UTF-8, no duplicate keys)", what)
	}
	if err := jsonv2.Unmarshal(data, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "invalid %s: %s", strings.TrimPrefix(what, "the "), bodyError(err))
	}
	return nil
}

// bodyError describes a decoding error without quoting the body.
func bodyError(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		where := string(se.JSONPointer)
		if where == "" {
			where = "the body"
		}
		if se.Err != nil && strings.Contains(se.Err.Error(), "unknown object member") {
			return fmt.Sprintf("unknown member %.80s", where)
		}
		if se.JSONKind != 0 {
			return fmt.Sprintf("%s: unexpected JSON %s", where, se.JSONKind)
		}
		return where + ": wrong type"
	}
	return "not valid JSON"
}

// followRun streams a run's progress as server-sent events.
func (h *Handler) followRun(w http.ResponseWriter, r *http.Request, c duet.Caller) (any, error) {
	return nil, ServeProgress(w, r, h.svc, c, r.PathValue("runId"), h.WriteError)
}

// ServeProgress answers r with the progress of run runID as server-sent
// events ("progress", data: a JSON Progress) until the run ends ("end"),
// the client goes away or the stream reaches its time limit. An error
// before the first event is written with writeErr.
func ServeProgress(w http.ResponseWriter, r *http.Request, svc *Service, c duet.Caller, runID string, writeErr func(http.ResponseWriter, error)) error {
	fl, _ := w.(http.Flusher)
	started, done := false, false
	err := svc.FollowRun(r.Context(), c, runID, func(p Progress) error {
		done = p.Run.Done
		if !started {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		b, err := MarshalJSON(p)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: progress\ndata: %s\n\n", b); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	})
	if err != nil && !started {
		writeErr(w, err)
		return nil
	}
	if started && done { // else the stream reached its time limit: the client reconnects
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
		if fl != nil {
			fl.Flush()
		}
	}
	return nil
}

// report serves a run's report in the format asked for.
func (h *Handler) report(w http.ResponseWriter, r *http.Request, c duet.Caller) (any, error) {
	f, err := report.ParseFormat(r.URL.Query().Get("format"))
	if err != nil {
		return nil, bad(err)
	}
	if a := r.URL.Query().Get("attachments"); a != "" {
		if f != report.JUnit || a != "zip" {
			return nil, bad(duet.Errorf(duet.CodeInvalidArgument, "attachments=zip goes with format=junit (the JUnit report and its failed cases' screenshots and traces in one zip), not %s and %q", f, a))
		}
		rep, err := h.svc.RunJUnitZip(r.Context(), c, r.PathValue("runId"), r.URL.Query().Get("cursor"))
		if err != nil {
			return nil, err
		}
		reportHeaders(w, rep)
		w.Header().Set("Content-Type", rep.ContentType)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-junit.zip"`, r.PathValue("runId")))
		w.Write(rep.Body)
		return nil, nil
	}
	limit, err := intParam(r, "limit")
	if err != nil {
		return nil, err
	}
	rep, err := h.svc.RunReportPage(r.Context(), c, r.PathValue("runId"), f, report.Page{Cursor: r.URL.Query().Get("cursor"), Limit: limit})
	if err != nil {
		return nil, err
	}
	reportHeaders(w, rep)
	w.Header().Set("Duet-Report-Cases", fmt.Sprintf("%d %d", rep.Totals.Passed, rep.Totals.Cases))
	WriteReport(w, rep, r.PathValue("runId"), f, r.URL.Query().Has("download"))
	return nil, nil
}

// reportHeaders sets the run's status and, when the report shows only part
// of the run, the part shown, for a program that fetches the others too
// (duet report --server).
func reportHeaders(w http.ResponseWriter, rep Report) {
	if win := rep.Window; win != nil && win.NotShown > 0 {
		w.Header().Set("Duet-Report-Not-Shown", strconv.Itoa(win.NotShown))
		w.Header().Set("Duet-Report-Next-Cursor", win.NextCursor)
	}
	w.Header().Set("Duet-Run-Status", string(rep.Status))
}

// WriteReport writes a rendered report: the HTML under a policy that lets
// it show its inline styles and data: screenshots and nothing else (no
// script, framed only by Duet's own pages); a download names its file.
func WriteReport(w http.ResponseWriter, rep Report, runID string, f report.Format, download bool) {
	w.Header().Set("Content-Type", rep.ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'")
	if download {
		ext := map[report.Format]string{report.HTML: "html", report.JSON: "json", report.JUnit: "junit.xml"}[f]
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s"`, runID, ext))
	}
	w.Write(rep.Body)
}
