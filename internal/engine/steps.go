package engine

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/step"
)

// CallTool calls the tool of an mcpCall step as the run's executor (step.Env):
// after the approval check, with the step's bindings. The Invoker returns
// the result and the error scrubbed of the executor's credentials (it owns
// them); the engine scrubs the run's secrets once, when it keeps them.
func (cr *caseRun) CallTool(ctx context.Context, m *duet.MCPCallStep) (any, error) {
	if err := cr.checkApproval(ctx, m); err != nil {
		return nil, err
	}
	args, err := bindArgs(m.InputBindings, func(b duet.Binding) (any, error) { return cr.bind(ctx, b) })
	if err != nil {
		return nil, err
	}
	if cr.e.opts.Invoker == nil {
		return nil, duet.Errorf(duet.CodeMCPServerNotConfigured, "%s has not configured MCP server %s", cr.run.TriggeredBy, m.ServerKey)
	}
	cr.secrets.Learn(args)
	res, err := cr.e.opts.Invoker.Invoke(ctx, duet.InvokeRequest{
		Executor: cr.run.TriggeredBy, ServerKey: m.ServerKey, Tool: m.ToolName,
		Arguments: args, Source: cr.invokeSource(), TraceID: cr.run.TraceID,
	})
	var saved any
	if res != nil {
		saved = toolResultValue(res)
	}
	if duet.ErrorCode(err) == duet.CodeMCPServerNotConfigured {
		err = notRegistered(cr.run.TriggeredBy, cr.task, m)
	}
	return saved, err
}

// notRegistered is MCP_SERVER_NOT_CONFIGURED with what to do: the runner
// registers the server the step calls, whose address `duet task show`
// prints with the command (the runner of a shared task cannot see its
// author's registration, and a hint without the address does not paste).
func notRegistered(executor string, task *duet.Task, m *duet.MCPCallStep) error {
	name := m.ServerName
	if name == "" {
		name = m.ServerKey
	}
	return duet.Errorf(duet.CodeMCPServerNotConfigured,
		"%s has not registered MCP server %s (%s), which this step calls with the credentials of whoever runs it: `duet task show %s --as %s` prints its address and the `duet server add` command that registers it",
		executor, name, m.ServerKey, shellWord(task.Name), executor)
}

// shellWord quotes s for a POSIX shell unless it needs none.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// toolResultValue is what an mcpCall saves: the result as the server sent
// it, plus the joined text.
func toolResultValue(r *duet.ToolResult) any {
	out := map[string]any{"isError": r.IsError, "text": r.Text()}
	var content, structured any
	if len(r.Content) > 0 && json.Unmarshal(r.Content, &content) == nil {
		out["content"] = content
	}
	if len(r.StructuredContent) > 0 && json.Unmarshal(r.StructuredContent, &structured) == nil {
		out["structuredContent"] = structured
	}
	return out
}

// bindArgs binds a tool call's inputs with bind, in the order of their
// names: the call's arguments, or BINDING_FAILED naming the first input
// that did not bind.
func bindArgs(in map[string]duet.Binding, bind func(duet.Binding) (any, error)) (map[string]any, error) {
	args := make(map[string]any, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		v, err := bind(in[name])
		if err != nil {
			return nil, duet.WrapError(duet.CodeBindingFailed, err, "input %s: %s", name, duet.ErrorMessage(err))
		}
		args[name] = v
	}
	return args, nil
}

// bindVars binds b over vars when it binds a value (string leaves are
// templates) or a var path, which must not be null (ok); ok is false for
// the other sources.
func bindVars(b duet.Binding, vars map[string]any) (v any, ok bool, err error) {
	switch b.Source {
	case duet.BindValue:
		v, err := eval.RenderValue(b.Value, vars)
		if err != nil {
			return nil, true, duet.WrapError(duet.CodeBindingFailed, err, "%v", err)
		}
		return v, true, nil
	case duet.BindVar:
		v, err := eval.Eval(b.Path, vars)
		if err != nil {
			return nil, true, duet.WrapError(duet.CodeBindingFailed, err, "%s: %v", b.Path, err)
		}
		if v == nil {
			return nil, true, duet.Errorf(duet.CodeBindingFailed, "%s is null", b.Path)
		}
		return v, true, nil
	}
	return nil, false, nil
}

func (cr *caseRun) bind(ctx context.Context, b duet.Binding) (any, error) {
	if v, ok, err := bindVars(b, cr.vars); ok {
		return v, err
	}
	s, err := cr.page(ctx)
	if err != nil {
		return nil, err
	}
	switch b.Source {
	case duet.BindPageURL:
		raw, err := s.URL(ctx)
		if err != nil {
			return nil, err
		}
		return step.URLPart(raw, b.Path, b.Segment)
	case duet.BindPageTitle:
		return s.Title(ctx)
	case duet.BindPageText:
		return s.Text(ctx, b.Selector)
	case duet.BindPageAttr:
		v, ok, err := s.Attr(ctx, b.Selector, b.Attr)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, duet.Errorf(duet.CodeBindingFailed, "%s has no attribute %s", b.Selector, b.Attr)
		}
		return v, nil
	}
	return nil, duet.Errorf(duet.CodeBindingFailed, "unknown binding source %q", b.Source)
}

// page returns the execution's browser session, starting it when needed.
func (cr *caseRun) page(ctx context.Context) (BrowserSession, error) {
	if cr.session != nil {
		return cr.session, nil
	}
	if cr.e.opts.Browser == nil {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "no browser is available: install Chromium (apt-get install -y chromium) or set DUET_CHROME_PATH")
	}
	device := cr.run.Device
	if device == "" {
		device = cr.task.Device
	}
	s, err := cr.e.opts.Browser.NewSession(ctx, device, netguard.AllowURL(cr.task.BaseURL))
	if err != nil {
		return nil, err
	}
	cr.session = s
	cr.startTrace(ctx, s)
	return s, nil
}
