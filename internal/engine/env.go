package engine

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/step"
)

// A caseRun is the step.Env its steps run in: the step kinds (internal/step)
// reach the case's variables, its page and the engine's services through
// these methods, and CallTool (steps.go).
var _ step.Env = (*caseRun)(nil)

// Vars implements step.Env.
func (cr *caseRun) Vars() map[string]any { return cr.vars }

// Save implements step.Env: the variable counts against the case's budget
// (keep) and is learnt as a secret when its name says it is one.
func (cr *caseRun) Save(name string, v any) error {
	if err := cr.keep(name, v); err != nil {
		return err
	}
	cr.vars[name], cr.saved[name] = v, v
	cr.secrets.Learn(map[string]any{name: v})
	return nil
}

// Task implements step.Env.
func (cr *caseRun) Task() *duet.Task { return cr.task }

// Secrets implements step.Env.
func (cr *caseRun) Secrets() *redact.Set { return cr.secrets }

// Page implements step.Env.
func (cr *caseRun) Page(ctx context.Context) (step.Page, error) {
	s, err := cr.page(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Do implements step.Env with the case's client (Options.HTTPClient), made
// for it: its network guard lets the task's own base URL host be loopback
// or private.
func (cr *caseRun) Do(req *http.Request) (*http.Response, error) {
	// How deep in a chain of Duet calls the request is, whatever the case
	// wrote: a Duet it reaches refuses beyond its bound (calldepth).
	if err := calldepth.Set(req.Context(), req.Header, cr.e.opts.MaxCallDepth); err != nil {
		return nil, duet.WrapError(duet.CodeCallDepthExceeded, err, "%s", duet.ErrorMessage(err))
	}
	if cr.http == nil {
		cr.http = cr.e.opts.HTTPClient(netguard.AllowURL(cr.task.BaseURL))
	}
	return cr.http.Do(req)
}

// end closes what the case opened for its steps: its browser session and
// the idle connections of its http steps' client.
func (cr *caseRun) end() {
	if cr.session != nil {
		cr.session.Close()
	}
	cr.endHTTP()
}

// endHTTP closes the idle connections of the case's http client; the next
// request makes another.
func (cr *caseRun) endHTTP() {
	if cr.http != nil {
		cr.http.CloseIdleConnections()
		cr.http = nil
	}
}

// MaxBodyBytes implements step.Env.
func (cr *caseRun) MaxBodyBytes() int64 { return cr.e.opts.MaxBodyBytes }

// SaveArtifact implements step.Env.
func (cr *caseRun) SaveArtifact(ctx context.Context, st *duet.Step, name string, data []byte) (string, error) {
	if cr.e.opts.Artifacts == nil {
		return "", nil
	}
	idx, name := cr.artifactName(st, name)
	if cr.hooks != nil {
		name = cr.hooks.hook + "-" + name
	}
	if r := cr.retry(); r > 0 {
		// Each attempt keeps its own evidence: a retry's never replaces
		// an earlier attempt's.
		name = fmt.Sprintf("retry%d-%s", r, name)
	}
	return cr.e.opts.Artifacts.Save(ctx, cr.run.ID, cr.x.ID, idx, name, data)
}

// A caseRun gives AI steps the engine's model (Options.AI).
var _ step.AIEnv = (*caseRun)(nil)

// AI implements step.AIEnv.
func (cr *caseRun) AI() *step.AIConfig { return cr.e.opts.AI }

// AIRunTokens implements step.AIEnv: what the run's AI steps spent so far.
func (cr *caseRun) AIRunTokens(spent int) int {
	if cr.aiTokens == nil {
		return spent
	}
	return int(cr.aiTokens.Add(int64(spent)))
}

// AIRunTime implements step.AIEnv: how long the run's AI steps waited
// for the model so far.
func (cr *caseRun) AIRunTime(spent time.Duration) time.Duration {
	if cr.aiTime == nil {
		return spent
	}
	return time.Duration(cr.aiTime.Add(int64(spent)))
}

// NoteAI implements step.AIEnv: the result of the step running (the
// innermost, inside a flow step) carries u.
func (cr *caseRun) NoteAI(u duet.AIUsage) {
	if n := len(cr.running); n > 0 {
		cr.running[n-1].AI = &u
	}
}
