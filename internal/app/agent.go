package app

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/agent"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/devices"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/netguard"
)

// AgentDeps connect the test agent to the MCP client side and to the
// browser. Every field may be nil.
type AgentDeps struct {
	// Invoker is the one exit to registered MCP servers; with Servers it
	// gives the agent the user's MCP tools. Nil: no MCP tools.
	Invoker duet.Invoker
	// Servers lists a user's registered servers and archived tools (never
	// credentials): MCP tools of the agent, mcp assets of `duet asset`, the
	// mcp_tools prompt. Nil: none.
	Servers duet.MCPAssetLister
	// Pages shows the agent the page under test. Nil: each generation
	// starts a one-browser pool on demand when Chromium is found.
	Pages agent.PageInspector
}

// NewAgent returns the test agent, configured by the DUET_LLM_* variables
// read with getenv, and a function that releases what it holds (a browser
// pool). Returns LLM_NOT_CONFIGURED naming the variables when no endpoint
// is configured, INVALID_ARGUMENT when one is malformed.
func (a *App) NewAgent(getenv func(string) string, opts agent.Options) (*agent.Agent, func(), error) {
	cfg, err := llm.ConfigFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	cfg.Logger = a.Logger
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: a.Telemetry.LLMTransport(nil)} // requests and tokens as metrics
	}
	if opts.Logger == nil {
		opts.Logger = a.Logger
	}
	deps := a.agentDeps()
	release := func() {}
	if deps.Pages == nil {
		guard := NetPolicy(a.Config, a.self)
		pool := browser.NewPool(browserOptions(a.Config, &guard, 1, a.Logger))
		if pool.Available() == nil {
			deps.Pages = &browserPages{pool: pool}
			release = sync.OnceFunc(pool.Close)
		}
	}
	ag, err := agent.New(cfg, deps, opts)
	if err != nil {
		release()
		return nil, nil, err
	}
	return ag, release, nil
}

// agentDeps are the agent's stores and links, read when called.
func (a *App) agentDeps() agent.Deps {
	return agent.Deps{
		Cases:           a.Store,
		Assets:          a.Store,
		Generations:     a.Store,
		Invoker:         a.Agent.Invoker,
		Servers:         a.Agent.Servers,
		Pages:           a.Agent.Pages,
		CompilerOptions: a.CompilerOptions,
	}
}

// MCPAssets returns user's registered MCP servers as assets (none until
// AgentDeps.Servers is set).
func (a *App) MCPAssets(ctx context.Context, user string) ([]*duet.MCPServerAsset, error) {
	if a.Agent.Servers == nil {
		return nil, nil
	}
	return a.Agent.Servers.MCPAssets(ctx, user)
}

// lateServers reads App.Agent.Servers at call time, so that prompts built
// in Open see a lister wired afterwards.
type lateServers struct{ a *App }

func (l lateServers) MCPAssets(ctx context.Context, user string) ([]*duet.MCPServerAsset, error) {
	return l.a.MCPAssets(ctx, user)
}

// agentPrompts are the case-generation prompts of Duet's MCP server.
func (a *App) agentPrompts() []*mcpserver.Prompt {
	deps := agent.Deps{Cases: a.Store, Assets: a.Store, Servers: lateServers{a}}
	var out []*mcpserver.Prompt
	for _, spec := range agent.Prompts(deps, a.ResolveTask) {
		p := &mcpserver.Prompt{Name: spec.Name, Title: spec.Title, Description: spec.Description,
			Get: func(ctx context.Context, c duet.Caller, args map[string]string) (string, error) {
				return spec.Render(ctx, c.UserID, args)
			}}
		for _, arg := range spec.Args {
			p.Arguments = append(p.Arguments, mcpserver.PromptArgument{Name: arg.Name, Description: arg.Description, Required: arg.Required})
		}
		out = append(out, p)
	}
	return out
}

// browserPages is the agent's PageInspector over internal/browser: a fresh
// isolated session per page.
type browserPages struct{ pool *browser.Pool }

func (p *browserPages) InspectPage(ctx context.Context, rawURL, device string) (string, error) {
	// The agent looks at the task's pages (rawURL is on its base URL, which
	// the guard allows) with the task's preset, on this machine's browser.
	d, err := devices.Parse(device)
	if err != nil {
		return "", err
	}
	dev, err := browser.DeviceByName(d.Preset)
	if err != nil {
		return "", err
	}
	s, err := p.pool.NewSession(ctx, dev, netguard.AllowURL(rawURL))
	if err != nil {
		return "", err
	}
	defer s.Close()
	if err := s.Open(ctx, rawURL); err != nil {
		return "", err
	}
	return s.Summary(ctx, 0)
}

// generate is the Service's test agent (api.Generator): the agent of this
// process's DUET_LLM_* settings, released when the generation ends.
func (a *App) generate(ctx context.Context, user string, task *duet.Task, in api.GenerateIn, progress func(string)) (api.Generated, error) {
	ag, release, err := a.NewAgent(a.getenv, agent.Options{MaxTurns: in.MaxTurns, MaxTokens: in.MaxTokens, MaxRepairs: in.MaxRepairs,
		Timeout: time.Duration(in.TimeoutMs) * time.Millisecond, Progress: progress})
	if err != nil {
		return api.Generated{}, err
	}
	defer release()
	res, err := ag.Generate(ctx, agent.Request{User: user, Task: task, Goal: in.Goal, Skills: in.Skills, Prompt: in.Prompt,
		AllowTools: in.AllowTools, AllowFlows: in.AllowFlows})
	if res == nil {
		return api.Generated{}, err // nothing ran
	}
	out := api.Generated{Case: res.Case, Generation: res.Generation, Flagged: res.Flagged}
	for _, r := range res.Refused {
		out.Refused = append(out.Refused, api.Refusal(r))
	}
	if err != nil {
		out.Case = nil
		out.Error = &api.ErrorBody{Code: duet.ErrorCode(err), Message: duet.ErrorMessage(err)}
	}
	return out, nil
}
