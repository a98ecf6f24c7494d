package step

import (
	"context"
	"net/http"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/redact"
)

// Env is the case a step runs in, as a kind's run function sees it. The
// engine provides it (one per execution); what it does — the budget of the
// case's variables, the run's secrets, the network guard, the approval of
// MCP calls, where artifacts go — stays the engine's business.
type Env interface {
	// Vars returns the variables a step sees: the built-ins (task, run)
	// and those saved by earlier steps. The step must not change it.
	Vars() map[string]any
	// Save sets a variable, within the budget of the case's variables
	// (BINDING_FAILED past it); its value is learnt as the run's secret
	// when its name says it is one.
	Save(name string, v any) error
	// Task returns the task the case belongs to.
	Task() *duet.Task
	// Secrets returns the run's secrets: what a step learns is secret (a
	// header it sends, a password in a body) is scrubbed from everything
	// the run keeps.
	Secrets() *redact.Set
	// Page returns the case's browser page, starting the browser session
	// when needed. Returns BROWSER_UNAVAILABLE.
	Page(ctx context.Context) (Page, error)
	// Do sends the request of an http step with the engine's client; the
	// network guard lets it reach the task's own base URL host.
	Do(req *http.Request) (*http.Response, error)
	// MaxBodyBytes is how much of an HTTP response a step reads.
	MaxBodyBytes() int64
	// CallTool calls the tool of an mcpCall step as the run's executor:
	// after the executor's approval when the case is someone else's, with
	// the step's input bindings, the executor's credentials learnt as
	// secrets. It returns the result as saved ({content,
	// structuredContent, isError, text}), nil when there is none.
	CallTool(ctx context.Context, m *duet.MCPCallStep) (any, error)
	// SaveArtifact keeps a file a step made (a screenshot) and returns its
	// id; "" and no error when the engine keeps no artifacts.
	SaveArtifact(ctx context.Context, st *duet.Step, name string, data []byte) (string, error)
	// RunSteps runs steps — what the flow step now running runs in its
	// turn — in the case, one after the other, each as the case runs its
	// own steps (under its own timeout, saving its variables, with a
	// screenshot when it fails), its result kept among the flow step's
	// children with iteration (the loop iteration, from 1; 0 outside a
	// loop). It stops at the first step that fails (a failure its policy
	// makes optional goes on) and returns an error with that step's code,
	// naming it; ctx's error when ctx ends.
	RunSteps(ctx context.Context, steps []duet.Step, iteration int) error
	// FlowState records what the flow step now running has done so far:
	// the branch an if step took, the iterations a loop began. A run in
	// progress shows it.
	FlowState(branch string, iterations int)
}

// WaitCondition is what a waitFor step waits for.
type WaitCondition struct {
	Selector    string
	Text        string
	URLContains string
	URLMatches  string
	Visible     bool
	Timeout     time.Duration
}

// Page is the browser page of a case: what browser steps drive. Element
// operations wait up to the context's deadline for their element. Errors
// carry ELEMENT_NOT_FOUND, STEP_TIMEOUT, CANCELLED or BROWSER_ERROR.
//
// A kind that needs more of a browser than Page offers declares an
// extension interface in its own file (as Hoverer), which the drivers
// implement; a driver without it fails the step with BROWSER_ERROR.
type Page interface {
	Open(ctx context.Context, url string) error
	Click(ctx context.Context, selector string) error
	Fill(ctx context.Context, selector, value string) error
	Press(ctx context.Context, key, selector string) error
	Select(ctx context.Context, selector, value string) error
	WaitFor(ctx context.Context, c WaitCondition) error
	Text(ctx context.Context, selector string) (string, error)
	Visible(ctx context.Context, selector string) (bool, error)
	Attr(ctx context.Context, selector, name string) (string, bool, error)
	Value(ctx context.Context, selector string) (string, error)
	URL(ctx context.Context) (string, error)
	Title(ctx context.Context) (string, error)
	Screenshot(ctx context.Context, fullPage bool) ([]byte, error)
}

// render evaluates a template string over the step's variables.
func render(env Env, s string) (string, error) {
	out, err := eval.RenderString(s, env.Vars())
	if err != nil {
		return "", duet.WrapError(duet.CodeBindingFailed, err, "%v", err)
	}
	return out, nil
}

// renderOpt is render that leaves "" alone.
func renderOpt(env Env, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return render(env, s)
}

// noBody is the error of a stored step whose body is missing.
func noBody(st *duet.Step) error {
	return duet.Errorf(duet.CodeInternal, "step %d has no body", st.Index)
}
