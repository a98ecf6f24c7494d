package engine

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// A shared task runs its author's steps with the executor's credentials. In
// a case the executor did not write (and in post-run actions the executor
// did not write), every call that would use the executor's credentials —
// every mcpCall to a server the executor registered, read-only tools
// included — needs the executor's approval of that version first, and the
// approval holds only for the places it showed the version can send data to
// (DestinationsOf): a read-only result can leave through an http step, a
// page of a host the author controls, a post-run action. NeedsApproval
// decides whether a call needs it, an Approver whether it has it. A call to
// a server the executor has not registered needs none: it fails with
// MCP_SERVER_NOT_CONFIGURED, using nobody's credentials.

// ToolCatalog is where the engine reads a user's registrations and archived
// tool catalogs (duet.MCPClientStore is one).
type ToolCatalog interface {
	// FindMCPServerTool returns owner's registration of serverKey and the
	// archived tool (nil when the archive lacks it). Returns NOT_FOUND when
	// owner has not registered serverKey.
	FindMCPServerTool(ctx context.Context, owner, serverKey, tool string) (*duet.MCPServer, *duet.MCPTool, error)
}

// ApprovalRequest is a call that needs the executor's approval: of a step
// of a case, or (PostRun set) of a post-run action of the task.
type ApprovalRequest struct {
	Executor    string
	Author      string // who wrote the case version (or the post-run actions); "" when not known
	RunID       string
	TaskID      string
	TaskName    string
	CaseID      string
	CaseTitle   string
	CaseVersion int
	ServerKey   string
	Tool        string
	// Destinations are where the case version can send data to in this
	// run (DestinationsOf): the executor's approval must be of them.
	Destinations duet.Destinations
	// PostRun names the post-run action, PostRunHash the version of the
	// task's post-run actions it belongs to; both "" for a case's step.
	PostRun     string
	PostRunHash string
}

// Approver decides whether the executor approved a call of a case someone
// else wrote. It returns nil to go ahead, or an error coded
// APPROVAL_REQUIRED: the step fails with it and the case goes on as its
// failure policy says. StoreApprover reads approvals given beforehand (duet
// case approve); an approver that asks the executor at once (an MCP
// elicitation) can wrap it.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) error
}

// StoreApprover approves a call when the executor has approved that version
// of the case for the destinations it has now (duet.ApprovalStore), or that
// version of the post-run actions.
type StoreApprover struct {
	Store duet.ApprovalStore
}

// Approve implements Approver. Returns APPROVAL_REQUIRED.
func (a StoreApprover) Approve(ctx context.Context, req ApprovalRequest) error {
	if req.PostRun != "" {
		if a.Store != nil {
			_, err := a.Store.FindPostRunApproval(ctx, req.Executor, req.TaskID, req.PostRunHash)
			if err == nil {
				return nil
			}
			if duet.ErrorCode(err) != duet.CodeNotFound {
				return err
			}
		}
		return postRunApprovalRequired(req)
	}
	if a.Store != nil {
		ap, err := a.Store.FindCaseApproval(ctx, req.Executor, req.CaseID, req.CaseVersion)
		switch {
		case err == nil && ap.Holds(req.Destinations.Hash()):
			return nil
		case err == nil:
			return approvalRequired(req, true)
		case duet.ErrorCode(err) != duet.CodeNotFound:
			return err
		}
	}
	return approvalRequired(req, false)
}

func approvalRequired(req ApprovalRequest, changed bool) error {
	writer := req.Author
	if writer == "" {
		writer = "someone else (the case changed after the run started)"
	}
	why := fmt.Sprintf("case %q (version %d) was written by %s, and this step calls %s of MCP server %s with your credentials, %s",
		req.CaseTitle, req.CaseVersion, writer, req.Tool, req.ServerKey, req.Executor)
	if changed {
		why = fmt.Sprintf("you approved version %d of case %q (written by %s), but where it can send data changed since (the task's base URL or its post-run actions), and this step calls %s of MCP server %s with your credentials, %s",
			req.CaseVersion, req.CaseTitle, writer, req.Tool, req.ServerKey, req.Executor)
	}
	return duet.Errorf(duet.CodeApprovalRequired,
		"%s; what it obtains can reach %s: review it with `duet case show %s --as %s`, then approve it with `duet case approve %s --as %s` and run it again",
		why, strings.Join(req.Destinations.Lines(), "; "), req.CaseID, req.Executor, req.CaseID, req.Executor)
}

func postRunApprovalRequired(req ApprovalRequest) error {
	writer := req.Author
	if writer == "" {
		writer = "someone else"
	}
	task := req.TaskName
	if task == "" {
		task = req.TaskID
	}
	return duet.Errorf(duet.CodeApprovalRequired,
		"the post-run actions of task %q were written by %s, and action %q calls %s of MCP server %s with your credentials, %s: "+
			"review them with `duet task show %s --as %s`, then approve this version with `duet task approve-post-run %s --as %s`",
		task, writer, req.PostRun, req.Tool, req.ServerKey, req.Executor, req.TaskID, req.Executor, req.TaskID, req.Executor)
}

// NeedsApproval reports whether step m of a case version written by author
// (or a post-run action m written by author) needs executor's approval
// before it calls its tool as executor: when author is someone else (or not
// known) and executor has registered the server, so the call would use
// their credentials — whatever the tool's annotations say (a read-only
// result can be carried elsewhere). A call to a server executor has not
// registered needs none: it fails with MCP_SERVER_NOT_CONFIGURED, using
// nobody's credentials. tools nil means every call would use them.
func NeedsApproval(ctx context.Context, tools ToolCatalog, executor, author string, m *duet.MCPCallStep) (bool, error) {
	if m == nil || author != "" && author == executor {
		return false, nil
	}
	if tools == nil {
		return true, nil
	}
	_, _, err := tools.FindMCPServerTool(ctx, executor, m.ServerKey, m.ToolName)
	switch {
	case duet.ErrorCode(err) == duet.CodeNotFound:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s's registration of %s: %w", executor, m.ServerKey, err)
	}
	return true, nil
}

// checkApproval fails a call, with the executor's credentials, of a case
// the executor did not write, unless the executor approved the case version
// for the places it can send data to in this run.
func (cr *caseRun) checkApproval(ctx context.Context, m *duet.MCPCallStep) error {
	if cr.hooks != nil {
		return cr.hooks.checkApproval(ctx, cr, m)
	}
	executor := cr.run.TriggeredBy
	author, err := cr.author(ctx)
	if err != nil {
		return err
	}
	need, err := NeedsApproval(ctx, cr.e.tools, executor, author, m)
	if err != nil || !need {
		return err
	}
	if cr.dests == nil {
		d := DestinationsOf(cr.task, cr.x.Steps)
		cr.dests = &d
	}
	return cr.e.approver.Approve(ctx, ApprovalRequest{
		Executor: executor, Author: author, RunID: cr.run.ID, TaskID: cr.task.ID, TaskName: cr.task.Name,
		CaseID: cr.x.CaseID, CaseTitle: cr.x.CaseTitle, CaseVersion: cr.x.CaseVersion,
		ServerKey: m.ServerKey, Tool: m.ToolName, Destinations: *cr.dests,
	})
}

// author returns who wrote the version of the case this execution runs; ""
// when that is not known (the case has another version now).
func (cr *caseRun) author(ctx context.Context) (string, error) {
	if cr.authorKnown {
		return cr.authorName, nil
	}
	c, err := cr.e.store.FindCaseByID(ctx, "", cr.x.CaseID)
	switch {
	case duet.ErrorCode(err) == duet.CodeNotFound:
	case err != nil:
		return "", err
	case c.Version == cr.x.CaseVersion:
		cr.authorName = c.CreatedBy
	}
	cr.authorKnown = true
	return cr.authorName, nil
}

// Review is what running a version of a case asks of its executor: the
// steps that would use their credentials (none: nothing to approve) and
// every place the version can send data to, which an approval shows and is
// bound to.
type Review struct {
	Calls        []duet.PendingCall `json:"calls"`
	Destinations duet.Destinations  `json:"destinations"`
	// DestinationsHash is Destinations.Hash: an approval holds while it
	// equals the approval's.
	DestinationsHash string `json:"destinationsHash"`
}

// Needed reports whether a run of the version by the executor needs their
// approval (some step would use their credentials).
func (r *Review) Needed() bool { return len(r.Calls) > 0 }

// Holds reports whether ap (nil: none) is an approval of the version that
// covers the destinations it has now.
func (r *Review) Holds(ap *duet.CaseApproval) bool { return ap.Holds(r.DestinationsHash) }

// ReviewCase returns what the current version of c, a case of task, asks of
// executor: the same rule the engine applies when it runs (NeedsApproval,
// DestinationsOf).
func ReviewCase(ctx context.Context, tools ToolCatalog, executor string, task *duet.Task, c *duet.Case) (*Review, error) {
	r := &Review{Calls: []duet.PendingCall{}, Destinations: DestinationsOf(task, c.Steps)}
	r.DestinationsHash = r.Destinations.Hash()
	// The case's own steps and those its flow steps run (if, loops, flows,
	// its hooks): Step is the case's own step that makes, or runs, the call.
	for _, top := range c.Steps {
		var err error
		duet.WalkSteps([]duet.Step{top}, func(st *duet.Step) bool {
			if st.MCP == nil {
				return true
			}
			var need bool
			if need, err = NeedsApproval(ctx, tools, executor, c.CreatedBy, st.MCP); err != nil {
				return false
			}
			if need {
				r.Calls = append(r.Calls, duet.PendingCall{Step: top.Index + 1, Name: st.Name, ServerKey: st.MCP.ServerKey, ServerName: st.MCP.ServerName, Tool: st.MCP.ToolName})
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// DestinationsOf returns every place steps, run in task, can send data to:
// the host of the task's base URL (its pages see what the browser types),
// the hosts of open and http steps — a URL whose host is built from a
// variable at run time can reach any host the network guard allows — the
// MCP tools the steps call, and those the task's post-run actions call
// (they are sent the run's summary).
func DestinationsOf(task *duet.Task, steps []duet.Step) duet.Destinations {
	d := duet.Destinations{Hosts: []string{}, Tools: []duet.ToolDestination{}, PostRun: []duet.ToolDestination{}}
	if task != nil {
		d.BaseHost = literalHost(task.BaseURL)
		if d.BaseHost != "" {
			d.Hosts = append(d.Hosts, d.BaseHost)
		}
	}
	// The steps the flow steps run too (if, loops, flows).
	duet.WalkSteps(steps, func(st *duet.Step) bool {
		var u string
		switch {
		case st.MCP != nil:
			t := duet.ToolDestination{ServerKey: st.MCP.ServerKey, ServerName: st.MCP.ServerName, Tool: st.MCP.ToolName}
			if !slices.ContainsFunc(d.Tools, func(o duet.ToolDestination) bool { return o.ServerKey == t.ServerKey && o.Tool == t.Tool }) {
				d.Tools = append(d.Tools, t)
			}
			return true
		case st.HTTP != nil:
			u = st.HTTP.URL
		case st.Kind == duet.StepOpen && st.Browser != nil:
			u = st.Browser.URL
		default:
			return true
		}
		host, anyHost := templateHost(u, d.BaseHost)
		d.AnyHost = d.AnyHost || anyHost
		if host != "" && !slices.Contains(d.Hosts, host) {
			d.Hosts = append(d.Hosts, host)
		}
		return true
	})
	slices.Sort(d.Hosts)
	if task != nil {
		for _, a := range task.PostRun {
			t := duet.ToolDestination{ServerKey: a.ServerKey, ServerName: a.ServerName, Tool: a.ToolName}
			if !slices.ContainsFunc(d.PostRun, func(o duet.ToolDestination) bool { return o.ServerKey == t.ServerKey && o.Tool == t.Tool }) {
				d.PostRun = append(d.PostRun, t)
			}
		}
	}
	return d
}

// templateHost returns the host a step's URL template reaches, as the
// engine resolves it (resolveURL): a relative URL reaches base; an absolute
// one whose scheme and host are literal reaches that host. anyHost: the
// host is built at run time. Neither: the step cannot reach anything (it
// fails).
func templateHost(tmpl, base string) (host string, anyHost bool) {
	prefix, whole := eval.LiteralPrefix(tmpl)
	if strings.HasPrefix(prefix, "/") && !strings.HasPrefix(prefix, "//") {
		return base, false // resolveURL refuses a rendered "//..."
	}
	scheme, rest, ok := strings.Cut(prefix, "://")
	if !ok {
		return "", !whole
	}
	end := strings.IndexAny(rest, "/?#\\")
	if end < 0 {
		if !whole {
			return "", true // the host goes on in an expression
		}
		end = len(rest)
	}
	authority := rest[:end]
	if end < len(rest) && rest[end] == '\\' || strings.Contains(authority, "%") {
		// Browsers read a backslash as a slash and decode a host's
		// escapes; Go's URL parser does neither: no literal host to show.
		return "", true
	}
	if h := literalHost(scheme + "://" + authority); h != "" {
		return h, false
	}
	return "", !whole
}

// literalHost is the host (with its port) of an absolute http(s) URL, in
// lower case; "" when raw is not one.
func literalHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Host)
}
