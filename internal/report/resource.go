package report

import (
	"context"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// ResourceTemplate is the URI template of run reports as MCP resources:
// duet://runs/RUN_ID/report.html, .json or .junit.xml, with ?cursor=C for
// the cases after the first MaxCases (Window.NextCursor).
const ResourceTemplate = "duet://runs/{runId}/report.{format}{?cursor}"

var resourceFormats = map[string]struct {
	format Format
	mime   string
}{
	"html":      {HTML, "text/html"},
	"json":      {JSON, "application/json"},
	"junit.xml": {JUnit, "application/xml"},
}

// MCPResources returns a setup function (for mcpserver.Options.Setup) that
// serves run reports as MCP resources. A read builds the report as the
// caller the transport put in the context sees it: a run the caller may not
// see is not found.
func MCPResources(store Store, arts Artifacts) func(*mcp.Server) {
	return func(srv *mcp.Server) {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{
			Name:  "run-report",
			Title: "Test run report",
			Description: "The report of a test run (runId from start_test_run or get_test_run): format html is one " +
				"self-contained page with screenshots inline, json the same data for programs, junit.xml JUnit XML for CI. " +
				"A report shows at most 500 cases; a bigger run's report says how many more there are and the cursor of the " +
				"next part (…/report.json?cursor=C). Outputs, variables, messages and screenshots are shown only to the " +
				"person who ran it.",
			URITemplate: ResourceTemplate,
		}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			runID, format, cursor, ok := parseResourceURI(uri)
			caller, _ := duet.CallerFromContext(ctx)
			if !ok || caller.UserID == "" {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			r, err := BuildPage(ctx, store, arts, caller.UserID, runID, Page{Cursor: cursor})
			switch duet.ErrorCode(err) {
			case duet.CodeNotFound, duet.CodeInvalidArgument:
				return nil, mcp.ResourceNotFoundError(uri)
			}
			if err != nil {
				return nil, err
			}
			f := resourceFormats[format]
			b := catalog.NewBudgetBuffer(ctx) // stops at the call's result budget
			if err := r.Write(b, f.format); err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: f.mime, Text: string(b.Bytes())}}}, nil
		})
		srv.AddResourceTemplate(&mcp.ResourceTemplate{
			Name:  "case-trace",
			Title: "Trace of a test case",
			Description: "What a case of a run did, cut to what a model can read (at most 32 KB): its steps with their status, " +
				"timing and error, and the browser console lines and network requests (method, URL, status, timing, size) " +
				"that bear on the failing step — its own, and the errors and failed requests before it. Screenshots, DOM " +
				"snapshots and bodies stay in the trace zip (REST /api/v1/runs/RUN/cases/CASE/trace). CASE is the case's key, " +
				"case id or execution id. Only the person who ran it may read it; a case that kept no trace is not found.",
			URITemplate: TraceResourceTemplate,
			MIMEType:    "application/json",
		}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			runID, ref, ok := parseTraceURI(uri)
			caller, _ := duet.CallerFromContext(ctx)
			if !ok || caller.UserID == "" {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			budget := TraceSummaryBytes
			if b := catalog.ResultBudget(ctx); b > 0 {
				budget = min(budget, b/2)
			}
			data, err := TraceSummary(ctx, store, arts, caller.UserID, runID, ref, budget)
			switch duet.ErrorCode(err) {
			case duet.CodeNotFound, duet.CodeInvalidArgument, duet.CodePermissionDenied:
				return nil, mcp.ResourceNotFoundError(uri)
			}
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
		})
	}
}

// TraceResourceTemplate is the URI template of case traces as MCP
// resources: a summary of the trace a model can read (TraceSummary).
const TraceResourceTemplate = "duet://runs/{runId}/cases/{case}/trace.json"

// TraceSummaryBytes bounds the trace summary an MCP resource returns.
const TraceSummaryBytes = 32 << 10

// parseTraceURI splits duet://runs/RUN_ID/cases/CASE/trace.json.
func parseTraceURI(uri string) (runID, ref string, ok bool) {
	rest, ok := strings.CutPrefix(uri, "duet://runs/")
	if !ok {
		return "", "", false
	}
	runID, rest, ok = strings.Cut(rest, "/cases/")
	if !ok || runID == "" || strings.Contains(runID, "/") {
		return "", "", false
	}
	ref, ok = strings.CutSuffix(rest, "/trace.json")
	if !ok || ref == "" || strings.ContainsAny(ref, "/?#") {
		return "", "", false
	}
	return runID, ref, true
}

// parseResourceURI splits duet://runs/RUN_ID/report.FORMAT[?cursor=C].
func parseResourceURI(uri string) (runID, format, cursor string, ok bool) {
	rest, ok := strings.CutPrefix(uri, "duet://runs/")
	if !ok {
		return "", "", "", false
	}
	rest, query, _ := strings.Cut(rest, "?")
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil || len(q) != 1 || len(q["cursor"]) != 1 {
			return "", "", "", false
		}
		cursor = q.Get("cursor")
	}
	runID, file, ok := strings.Cut(rest, "/")
	if !ok || runID == "" {
		return "", "", "", false
	}
	format, ok = strings.CutPrefix(file, "report.")
	if _, known := resourceFormats[format]; !ok || !known {
		return "", "", "", false
	}
	return runID, format, cursor, true
}
