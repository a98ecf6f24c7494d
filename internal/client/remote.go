package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/report"
)

// Remote is the Client of a Duet server: every operation is a request to
// its REST API (api.Prefix, described at /api/v1/openapi.json) with a
// personal access token, so it is the server's Service that identifies,
// checks, governs and audits it (callSource api).
type Remote struct {
	base  string // https://duet.example.com, no trailing slash
	token string
	user  string
	hc    *http.Client
}

// maxAnswer bounds an answer read from the server (a report is the
// largest: the server's result budget).
const maxAnswer = 256 << 20

// ParseServerURL checks the address of a Duet server: http or https, a
// host, no credentials, query or fragment; plain http only to a loopback
// address (a token must not cross a network in the clear). It returns the
// URL without a trailing slash. Errors are INVALID_ARGUMENT.
func ParseServerURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", duet.Errorf(duet.CodeInvalidArgument, "want the Duet server's address, like https://duet.example.com, got %.100q", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", duet.Errorf(duet.CodeInvalidArgument, "the Duet server's address takes no user, query or fragment: %.100q", raw)
	}
	if u.Scheme == "http" {
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "", duet.Errorf(duet.CodeInvalidArgument, "%s: plain http would send your token in the clear; use https (http only to a loopback address)", u.Redacted())
		}
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), nil
}

// Dial returns the Client of the Duet server at base (ParseServerURL)
// with token, and checks the token by asking the server whom it belongs
// to (getMe). Returns UNAUTHENTICATED, UNAVAILABLE.
func Dial(ctx context.Context, base, token string) (*Remote, error) {
	b, err := ParseServerURL(base)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(token) == "" {
		return nil, duet.Errorf(duet.CodeUnauthenticated, "no token for %s: run `duet login %s`, or set DUET_TOKEN (or DUET_TOKEN_FILE)", b, b)
	}
	r := &Remote{base: b, token: strings.TrimSpace(token), hc: &http.Client{}}
	me, err := r.Me(ctx)
	if err != nil {
		return nil, err
	}
	r.user = me.User
	return r, nil
}

// User implements Client: the token's user.
func (r *Remote) User() string { return r.user }

// Server implements Client.
func (r *Remote) Server() string { return r.base }

// Close implements Client.
func (r *Remote) Close() { r.hc.CloseIdleConnections() }

// request is one call of the REST API.
type request struct {
	method, path string
	query        url.Values
	body         any // JSON; nil: none
	header       http.Header
}

// send makes the request and returns the answer of a 2xx status; any other
// status is the error it carries ({"error": {code, message}}).
func (r *Remote) send(ctx context.Context, q request) (*http.Response, error) {
	var body io.Reader
	if q.body != nil {
		b, err := json.Marshal(q.body)
		if err != nil {
			return nil, duet.WrapError(duet.CodeInvalidArgument, err, "the request cannot be encoded")
		}
		body = bytes.NewReader(b)
	}
	u := r.base + api.Prefix + q.path
	if len(q.query) > 0 {
		u += "?" + q.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, q.method, u, body)
	if err != nil {
		return nil, duet.WrapError(duet.CodeInvalidArgument, err, "bad request to %s", r.base)
	}
	for k, v := range q.header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot reach the Duet server at %s: %v", r.base, rootCause(err))
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, r.answerError(resp)
}

// answerError is the error an answer that is not a success carries.
func (r *Remote) answerError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error *api.ErrorBody `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != nil && e.Error.Code != "" {
		err := &duet.Error{Code: e.Error.Code, Message: e.Error.Message}
		if e.Error.Code == duet.CodeUnauthenticated {
			err.Message += fmt.Sprintf(" (the token for %s: run `duet login %s` with a valid one, or set DUET_TOKEN)", r.base, r.base)
		}
		return err
	}
	code := duet.CodeUnavailable
	if resp.StatusCode/100 == 4 {
		code = duet.CodeInvalidArgument
	}
	return duet.Errorf(code, "%s answered %s%s: is it a Duet server (its API is at %s%s)?", r.base, resp.Status, snippet(b), r.base, api.Prefix)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return fmt.Sprintf(" (%q)", s)
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// call makes the request and decodes its JSON answer (none for 204).
func call[T any](ctx context.Context, r *Remote, q request) (T, error) {
	var out T
	resp, err := r.send(ctx, q)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return out, duet.WrapError(duet.CodeUnavailable, err, "reading the answer of %s", r.base)
	}
	if len(bytes.TrimSpace(b)) == 0 || resp.StatusCode == http.StatusNoContent {
		return out, nil
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, duet.WrapError(duet.CodeInternal, err, "the answer of %s %s is not what this duet understands (a different version?)", q.method, q.path)
	}
	return out, nil
}

// p escapes one path segment.
func p(s string) string { return url.PathEscape(s) }

// values builds a query of the non-empty pairs name, value, ...
func values(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func num(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func get[T any](ctx context.Context, r *Remote, path string, q url.Values) (T, error) {
	return call[T](ctx, r, request{method: http.MethodGet, path: path, query: q})
}

func post[T any](ctx context.Context, r *Remote, path string, body any) (T, error) {
	if body == nil {
		body = struct{}{}
	}
	return call[T](ctx, r, request{method: http.MethodPost, path: path, body: body})
}

func del(ctx context.Context, r *Remote, path string) error {
	_, err := call[json.RawMessage](ctx, r, request{method: http.MethodDelete, path: path})
	return err
}

// Me implements Client.
func (r *Remote) Me(ctx context.Context) (api.Me, error) { return get[api.Me](ctx, r, "/me", nil) }

// ListTasks implements Client.
func (r *Remote) ListTasks(ctx context.Context, in catalog.ListTasksIn) (catalog.ListTasksOut, error) {
	return get[catalog.ListTasksOut](ctx, r, "/tasks", values("query", in.Query, "owner", in.Owner, "cursor", in.Cursor, "limit", num(in.Limit)))
}

// GetTask implements Client.
func (r *Remote) GetTask(ctx context.Context, task string) (catalog.GetTaskOut, error) {
	return get[catalog.GetTaskOut](ctx, r, "/tasks/"+p(task), nil)
}

// ListCases implements Client.
func (r *Remote) ListCases(ctx context.Context, in catalog.ListCasesIn) (catalog.ListCasesOut, error) {
	drafts := ""
	if in.IncludeDrafts {
		drafts = "true"
	}
	return get[catalog.ListCasesOut](ctx, r, "/tasks/"+p(in.TaskID)+"/cases", values("includeDrafts", drafts, "cursor", in.Cursor, "limit", num(in.Limit)))
}

// CaseSources implements Client.
func (r *Remote) CaseSources(ctx context.Context, task, cursor string, limit int) (api.TaskCases, error) {
	return get[api.TaskCases](ctx, r, "/tasks/"+p(task)+"/sources", values("cursor", cursor, "limit", num(limit)))
}

// ApplySuite implements Client.
func (r *Remote) ApplySuite(ctx context.Context, in api.ApplyIn) (*duet.ApplyResult, error) {
	return post[*duet.ApplyResult](ctx, r, "/tasks", in)
}

// ShareTask implements Client.
func (r *Remote) ShareTask(ctx context.Context, task string, in api.ShareIn) (api.Sharing, error) {
	return post[api.Sharing](ctx, r, "/tasks/"+p(task)+"/shares", in)
}

// UnshareTask implements Client.
func (r *Remote) UnshareTask(ctx context.Context, task, with string) (api.Sharing, error) {
	return call[api.Sharing](ctx, r, request{method: http.MethodDelete, path: "/tasks/" + p(task) + "/shares/" + p(with)})
}

// TransferTask implements Client.
func (r *Remote) TransferTask(ctx context.Context, task string, in api.TransferIn) (*duet.TaskTransfer, error) {
	return post[*duet.TaskTransfer](ctx, r, "/tasks/"+p(task)+"/transfer", in)
}

// ListTaskServers implements Client.
func (r *Remote) ListTaskServers(ctx context.Context, task string) (api.TaskServers, error) {
	return get[api.TaskServers](ctx, r, "/tasks/"+p(task)+"/servers", nil)
}

// GetPostRun implements Client.
func (r *Remote) GetPostRun(ctx context.Context, task string) (api.PostRun, error) {
	return get[api.PostRun](ctx, r, "/tasks/"+p(task)+"/post-run", nil)
}

// ApprovePostRun implements Client.
func (r *Remote) ApprovePostRun(ctx context.Context, task string, in api.PostRunApprovalIn) (api.PostRun, error) {
	return post[api.PostRun](ctx, r, "/tasks/"+p(task)+"/post-run/approval", in)
}

// GetCase implements Client.
func (r *Remote) GetCase(ctx context.Context, caseID string) (catalog.GetCaseOut, error) {
	return get[catalog.GetCaseOut](ctx, r, "/cases/"+p(caseID), nil)
}

// CaseAIPlans implements Client.
func (r *Remote) CaseAIPlans(ctx context.Context, caseID string) (api.AIPlanList, error) {
	return get[api.AIPlanList](ctx, r, "/cases/"+p(caseID)+"/ai-plans", nil)
}

// FreezeCase implements Client.
func (r *Remote) FreezeCase(ctx context.Context, caseID string) (api.FreezeOut, error) {
	return post[api.FreezeOut](ctx, r, "/cases/"+p(caseID)+"/freeze", nil)
}

// ClearAIPlans implements Client.
func (r *Remote) ClearAIPlans(ctx context.Context, in api.ClearAIPlansIn) (api.ClearAIPlansOut, error) {
	return post[api.ClearAIPlansOut](ctx, r, "/ai-plans/clear", in)
}

// GetApproval implements Client.
func (r *Remote) GetApproval(ctx context.Context, caseID string) (api.Approval, error) {
	return get[api.Approval](ctx, r, "/cases/"+p(caseID)+"/approval", nil)
}

// ApproveCase implements Client.
func (r *Remote) ApproveCase(ctx context.Context, caseID string, in api.ApprovalIn) (api.Approval, error) {
	return post[api.Approval](ctx, r, "/cases/"+p(caseID)+"/approval", in)
}

// RevokeApproval implements Client.
func (r *Remote) RevokeApproval(ctx context.Context, caseID string) error {
	return del(ctx, r, "/cases/"+p(caseID)+"/approval")
}

// ListApprovals implements Client.
func (r *Remote) ListApprovals(ctx context.Context, in api.ApprovalsIn) (api.ApprovalList, error) {
	return get[api.ApprovalList](ctx, r, "/approvals", values("taskId", in.TaskID))
}

// ListGenerations implements Client.
func (r *Remote) ListGenerations(ctx context.Context, in api.GenerationsIn) (api.GenerationList, error) {
	return get[api.GenerationList](ctx, r, "/generations", values("taskId", in.TaskID, "limit", num(in.Limit)))
}

// GenerateCase implements Client: the server's agent writes the case; its
// progress is not streamed (the answer comes when the generation ends).
func (r *Remote) GenerateCase(ctx context.Context, in api.GenerateIn, _ func(string)) (api.Generated, error) {
	return post[api.Generated](ctx, r, "/generations", in)
}

// StartRun implements Client: the idempotency key travels as the
// Idempotency-Key header.
func (r *Remote) StartRun(ctx context.Context, in catalog.StartRunIn, origin *duet.RunOrigin) (catalog.StartRunOut, error) {
	return call[catalog.StartRunOut](ctx, r, request{method: http.MethodPost, path: "/runs",
		body: api.RunIn{TaskID: in.TaskID, CaseIDs: in.CaseIDs, Device: in.Device, Environment: in.Environment, Trace: in.Trace, Origin: origin,
			Retries: in.Retries, Tags: in.Tags, ExcludeTags: in.ExcludeTags, Grep: in.Grep},
		header: http.Header{"Idempotency-Key": {in.IdempotencyKey}}})
}

// ExecuteHere implements Client: the server's workers execute its runs.
func (r *Remote) ExecuteHere(context.Context, string) <-chan struct{} {
	done := make(chan struct{})
	close(done)
	return done
}

// FollowRun implements Client over the run's server-sent events
// (GET /runs/{runId}/events), connecting again when a stream reaches its
// time limit before the run ends.
func (r *Remote) FollowRun(ctx context.Context, runID string, send func(api.Progress) error) error {
	for {
		ended, err := r.followOnce(ctx, runID, send)
		if err != nil || ended || ctx.Err() != nil {
			return err
		}
		select { // the server closed the stream early: connect again
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// followOnce reads one event stream; ended reports that the run ended.
func (r *Remote) followOnce(ctx context.Context, runID string, send func(api.Progress) error) (ended bool, err error) {
	resp, err := r.send(ctx, request{method: http.MethodGet, path: "/runs/" + p(runID) + "/events",
		header: http.Header{"Accept": {"text/event-stream"}}})
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	event, data := "", []byte(nil)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0: // the end of an event
			switch event {
			case "progress":
				var pg api.Progress
				if err := json.Unmarshal(data, &pg); err != nil {
					return false, duet.WrapError(duet.CodeInternal, err, "a progress event of %s is not what this duet understands", r.base)
				}
				if err := send(pg); err != nil {
					return false, err
				}
				if pg.Run.Done {
					return true, nil
				}
			case "end":
				return true, nil
			}
			event, data = "", data[:0]
		case bytes.HasPrefix(line, []byte("event:")):
			event = strings.TrimSpace(string(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
	}
	if ctx.Err() != nil {
		return false, nil
	}
	return false, nil // the stream ended (its time limit, a proxy): the caller connects again
}

// GetRun implements Client.
func (r *Remote) GetRun(ctx context.Context, in catalog.GetRunIn) (catalog.GetRunOut, error) {
	return get[catalog.GetRunOut](ctx, r, "/runs/"+p(in.RunID), values("cursor", in.Cursor, "limit", num(in.Limit)))
}

// GetExecution implements Client.
func (r *Remote) GetExecution(ctx context.Context, executionID string) (catalog.GetExecutionOut, error) {
	return get[catalog.GetExecutionOut](ctx, r, "/executions/"+p(executionID), nil)
}

// ListRuns implements Client.
func (r *Remote) ListRuns(ctx context.Context, in api.RunListIn) (api.RunList, error) {
	return get[api.RunList](ctx, r, "/runs", values("taskId", in.TaskID, "status", string(in.Status), "branch", in.Branch, "commit", in.Commit, "cursor", in.Cursor, "limit", num(in.Limit)))
}

// RunExit implements Client.
func (r *Remote) RunExit(ctx context.Context, runID string, in api.RunExitIn) (report.Exit, error) {
	flaky := ""
	if in.FailOnFlaky {
		flaky = "true"
	}
	return get[report.Exit](ctx, r, "/runs/"+p(runID)+"/exit", values("failOnFlaky", flaky))
}

// CancelRun implements Client.
func (r *Remote) CancelRun(ctx context.Context, runID string) (api.RunSummary, error) {
	return call[api.RunSummary](ctx, r, request{method: http.MethodPost, path: "/runs/" + p(runID) + "/cancel"})
}

// Report implements Client: the report's body, and from the Duet-*
// headers the run's state and the part shown.
func (r *Remote) Report(ctx context.Context, runID string, f report.Format, pg report.Page) (api.Report, error) {
	resp, err := r.send(ctx, request{method: http.MethodGet, path: "/runs/" + p(runID) + "/report",
		query: values("format", string(f), "cursor", pg.Cursor, "limit", num(pg.Limit))})
	if err != nil {
		return api.Report{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return api.Report{}, duet.WrapError(duet.CodeUnavailable, err, "reading the report from %s", r.base)
	}
	out := api.Report{ContentType: resp.Header.Get("Content-Type"), Body: body, RunID: runID, Status: duet.RunStatus(resp.Header.Get("Duet-Run-Status"))}
	fmt.Sscanf(resp.Header.Get("Duet-Report-Cases"), "%d %d", &out.Totals.Passed, &out.Totals.Cases)
	if n, _ := strconv.Atoi(resp.Header.Get("Duet-Report-Not-Shown")); n > 0 {
		out.Window = &report.Window{NotShown: n, NextCursor: resp.Header.Get("Duet-Report-Next-Cursor")}
	}
	return out, nil
}

// ListStopRequests implements Client.
func (r *Remote) ListStopRequests(ctx context.Context, in api.StopRequestsIn) (api.StopRequestList, error) {
	all := ""
	if in.All {
		all = "true"
	}
	return get[api.StopRequestList](ctx, r, "/stop-requests", values("runId", in.RunID, "all", all))
}

// DecideStop implements Client.
func (r *Remote) DecideStop(ctx context.Context, requestID string, in api.StopDecisionIn) (api.StopDecision, error) {
	return post[api.StopDecision](ctx, r, "/stop-requests/"+p(requestID)+"/decision", in)
}

// ListDevices implements Client.
func (r *Remote) ListDevices(ctx context.Context) (api.DeviceList, error) {
	return get[api.DeviceList](ctx, r, "/devices", nil)
}

// ListServers implements Client.
func (r *Remote) ListServers(ctx context.Context) (api.ServerList, error) {
	return get[api.ServerList](ctx, r, "/servers", nil)
}

// RegisterServer implements Client.
func (r *Remote) RegisterServer(ctx context.Context, in api.RegisterIn) (api.ServerDetail, error) {
	return post[api.ServerDetail](ctx, r, "/servers", in)
}

// GetServer implements Client.
func (r *Remote) GetServer(ctx context.Context, server string) (api.ServerDetail, error) {
	return get[api.ServerDetail](ctx, r, "/servers/"+p(server), nil)
}

// SyncServer implements Client.
func (r *Remote) SyncServer(ctx context.Context, server string) (api.ServerDetail, error) {
	return call[api.ServerDetail](ctx, r, request{method: http.MethodPost, path: "/servers/" + p(server) + "/sync"})
}

// RemoveServer implements Client.
func (r *Remote) RemoveServer(ctx context.Context, server string) error {
	return del(ctx, r, "/servers/"+p(server))
}

// LoginServer implements Client: the server obtains the token itself,
// which it can for a machine identity (client credentials); a person's
// authorization at a browser is refused by the server (no one to ask).
func (r *Remote) LoginServer(ctx context.Context, server string, in api.LoginIn) (api.ServerDetail, error) {
	return post[api.ServerDetail](ctx, r, "/servers/"+p(server)+"/login", in)
}

// CallTool implements Client.
func (r *Remote) CallTool(ctx context.Context, server, tool string, in api.CallIn) (api.CallOut, error) {
	return post[api.CallOut](ctx, r, "/servers/"+p(server)+"/tools/"+p(tool)+"/call", in)
}

func recordsQuery(in api.RecordsIn) url.Values {
	return values("user", in.User, "tool", in.Tool, "source", in.Source, "outcome", in.Outcome, "traceId", in.TraceID,
		"before", when(in.Before), "since", when(in.Since), "limit", num(in.Limit))
}

// ListInvocations implements Client.
func (r *Remote) ListInvocations(ctx context.Context, in api.RecordsIn) (api.InvocationList, error) {
	q := recordsQuery(in)
	if in.Server != "" {
		q.Set("server", in.Server)
	}
	return get[api.InvocationList](ctx, r, "/invocations", q)
}

// ListAudit implements Client.
func (r *Remote) ListAudit(ctx context.Context, in api.RecordsIn) (api.AuditList, error) {
	q := recordsQuery(in)
	if in.Method != "" {
		q.Set("method", in.Method)
	}
	return get[api.AuditList](ctx, r, "/audit", q)
}

// ListAssets implements Client.
func (r *Remote) ListAssets(ctx context.Context, in api.AssetListIn) (api.AssetList, error) {
	return get[api.AssetList](ctx, r, "/assets", values("kind", string(in.Kind)))
}

// SaveAsset implements Client.
func (r *Remote) SaveAsset(ctx context.Context, in api.AssetIn) (api.AssetSaved, error) {
	return post[api.AssetSaved](ctx, r, "/assets", in)
}

// GetAsset implements Client.
func (r *Remote) GetAsset(ctx context.Context, kind duet.AssetKind, ref string, version int) (*duet.Asset, error) {
	owner, name, ok := strings.Cut(ref, "/")
	if !ok {
		owner, name = r.user, ref
	}
	return get[*duet.Asset](ctx, r, "/assets/"+p(string(kind))+"/"+p(owner)+"/"+p(name), values("version", num(version)))
}

// DeleteAsset implements Client.
func (r *Remote) DeleteAsset(ctx context.Context, kind duet.AssetKind, name string) error {
	return del(ctx, r, "/assets/"+p(string(kind))+"/"+p(r.user)+"/"+p(name))
}

// ListTeams implements Client.
func (r *Remote) ListTeams(ctx context.Context) (api.TeamList, error) {
	return get[api.TeamList](ctx, r, "/teams", nil)
}

// CreateTeam implements Client.
func (r *Remote) CreateTeam(ctx context.Context, in api.TeamIn) (*duet.Team, error) {
	return post[*duet.Team](ctx, r, "/teams", in)
}

// GetTeam implements Client.
func (r *Remote) GetTeam(ctx context.Context, team string) (api.TeamDetail, error) {
	return get[api.TeamDetail](ctx, r, "/teams/"+p(team), nil)
}

// AddMember implements Client.
func (r *Remote) AddMember(ctx context.Context, team string, in api.MemberIn) (api.TeamDetail, error) {
	return post[api.TeamDetail](ctx, r, "/teams/"+p(team)+"/members", in)
}

// RemoveMember implements Client.
func (r *Remote) RemoveMember(ctx context.Context, team, user string) error {
	return del(ctx, r, "/teams/"+p(team)+"/members/"+p(user))
}

// SetRole implements Client.
func (r *Remote) SetRole(ctx context.Context, team, user string, in api.RoleIn) (api.TeamDetail, error) {
	return post[api.TeamDetail](ctx, r, "/teams/"+p(team)+"/members/"+p(user)+"/role", in)
}

// DeleteTeam implements Client.
func (r *Remote) DeleteTeam(ctx context.Context, team string) error {
	return del(ctx, r, "/teams/"+p(team))
}

// AddTeamServer implements Client.
func (r *Remote) AddTeamServer(ctx context.Context, team string, in api.TeamServerIn) (*duet.TeamServer, error) {
	return post[*duet.TeamServer](ctx, r, "/teams/"+p(team)+"/servers", in)
}

// RemoveTeamServer implements Client.
func (r *Remote) RemoveTeamServer(ctx context.Context, team, name string) error {
	return del(ctx, r, "/teams/"+p(team)+"/servers/"+p(name))
}

// RegisterTeamServer implements Client.
func (r *Remote) RegisterTeamServer(ctx context.Context, team, name string, in api.TeamRegisterIn) (api.ServerDetail, error) {
	return post[api.ServerDetail](ctx, r, "/teams/"+p(team)+"/servers/"+p(name)+"/register", in)
}

// ListTokens implements Client.
func (r *Remote) ListTokens(ctx context.Context) (api.TokenList, error) {
	return get[api.TokenList](ctx, r, "/tokens", nil)
}

// CreateToken implements Client.
func (r *Remote) CreateToken(ctx context.Context, in api.TokenIn) (api.TokenCreated, error) {
	return post[api.TokenCreated](ctx, r, "/tokens", in)
}

// RevokeToken implements Client.
func (r *Remote) RevokeToken(ctx context.Context, id string) error {
	return del(ctx, r, "/tokens/"+p(id))
}

var _ Client = (*Remote)(nil)

// Trace implements Client: the zip, and the case's key from the name the
// server gives the file.
func (r *Remote) Trace(ctx context.Context, runID, ref string) ([]byte, string, error) {
	resp, err := r.send(ctx, request{method: http.MethodGet, path: "/runs/" + p(runID) + "/cases/" + p(ref) + "/trace"})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, "", duet.WrapError(duet.CodeUnavailable, err, "reading the trace from %s", r.base)
	}
	key := ref
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		if k, ok := strings.CutPrefix(strings.TrimSuffix(params["filename"], ".zip"), "trace-"+runID+"-"); ok && k != "" {
			key = k
		}
	}
	return data, key, nil
}

// ListBaselines implements Client.
func (r *Remote) ListBaselines(ctx context.Context, in api.BaselinesIn) (api.BaselineList, error) {
	return get[api.BaselineList](ctx, r, "/baselines", values("taskId", in.TaskID, "status", string(in.Status)))
}

// DecideBaseline implements Client.
func (r *Remote) DecideBaseline(ctx context.Context, id string, approve bool) (*duet.Baseline, error) {
	verb := "/reject"
	if approve {
		verb = "/approve"
	}
	return post[*duet.Baseline](ctx, r, "/baselines/"+p(id)+verb, nil)
}

// CreateSchedule implements Client.
func (r *Remote) CreateSchedule(ctx context.Context, in api.ScheduleIn) (api.ScheduleView, error) {
	return post[api.ScheduleView](ctx, r, "/schedules", in)
}

// ListSchedules implements Client.
func (r *Remote) ListSchedules(ctx context.Context, in api.ScheduleListIn) (api.ScheduleList, error) {
	return get[api.ScheduleList](ctx, r, "/schedules", values("taskId", in.TaskID))
}

// PauseSchedule implements Client.
func (r *Remote) PauseSchedule(ctx context.Context, id string) (api.ScheduleView, error) {
	return post[api.ScheduleView](ctx, r, "/schedules/"+p(id)+"/pause", nil)
}

// ResumeSchedule implements Client.
func (r *Remote) ResumeSchedule(ctx context.Context, id string) (api.ScheduleView, error) {
	return post[api.ScheduleView](ctx, r, "/schedules/"+p(id)+"/resume", nil)
}

// RemoveSchedule implements Client.
func (r *Remote) RemoveSchedule(ctx context.Context, id string) error {
	return del(ctx, r, "/schedules/"+p(id))
}

// ContractAlerts implements Client.
func (r *Remote) ContractAlerts(ctx context.Context, task string) (api.AlertList, error) {
	return get[api.AlertList](ctx, r, "/tasks/"+p(task)+"/alerts", nil)
}

// SetSecret implements Client.
func (r *Remote) SetSecret(ctx context.Context, in api.SecretIn) (api.SecretSet, error) {
	return post[api.SecretSet](ctx, r, "/secrets", in)
}

// ListSecrets implements Client.
func (r *Remote) ListSecrets(ctx context.Context) (api.SecretList, error) {
	return get[api.SecretList](ctx, r, "/secrets", nil)
}

// DeleteSecret implements Client.
func (r *Remote) DeleteSecret(ctx context.Context, name string) error {
	return del(ctx, r, "/secrets/"+p(name))
}

// ServerDiff implements Client.
func (r *Remote) ServerDiff(ctx context.Context, server string, back int) (api.CatalogDiff, error) {
	return get[api.CatalogDiff](ctx, r, "/servers/"+p(server)+"/diff", values("back", num(back)))
}

// CreateWebhook implements Client.
func (r *Remote) CreateWebhook(ctx context.Context, in api.WebhookIn) (api.WebhookView, error) {
	return post[api.WebhookView](ctx, r, "/webhooks", in)
}

// ListWebhooks implements Client.
func (r *Remote) ListWebhooks(ctx context.Context, taskID string) (api.WebhookList, error) {
	return get[api.WebhookList](ctx, r, "/tasks/"+p(taskID)+"/webhooks", nil)
}

// DeleteWebhook implements Client.
func (r *Remote) DeleteWebhook(ctx context.Context, id string) error {
	return del(ctx, r, "/webhooks/"+p(id))
}

// ListDeliveries implements Client.
func (r *Remote) ListDeliveries(ctx context.Context, webhookID string, limit int) (api.DeliveryList, error) {
	return get[api.DeliveryList](ctx, r, "/webhooks/"+p(webhookID)+"/deliveries", values("limit", num(limit)))
}

// Redeliver implements Client.
func (r *Remote) Redeliver(ctx context.Context, deliveryID string) (*duet.WebhookDelivery, error) {
	return post[*duet.WebhookDelivery](ctx, r, "/webhooks/deliveries/"+p(deliveryID)+"/redeliver", nil)
}
