package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/scan"
)

// Defaults of Options.
const (
	DefaultMaxTurns           = 12
	DefaultMaxTokens          = 120_000
	DefaultTimeout            = 5 * time.Minute
	DefaultMaxRepairs         = 3
	DefaultMaxToolResultBytes = 16 << 10
)

// Options bound a generation. Zero values mean the defaults.
type Options struct {
	// MaxTurns caps the chat completions of one generation (each answer of
	// the model is a turn). Zero means DefaultMaxTurns (12).
	MaxTurns int
	// MaxTokens caps the tokens (prompt plus completion, as the endpoint
	// reports them) of one generation: no request is sent once they are
	// spent. Zero means DefaultMaxTokens (120000).
	MaxTokens int
	// MaxCompletionTokens caps each answer (the request's max_tokens). Zero
	// leaves it to the endpoint.
	MaxCompletionTokens int
	// Timeout bounds the whole generation (wall clock). Zero means
	// DefaultTimeout (5m).
	Timeout time.Duration
	// MaxRepairs is how many drafts that do not compile go back to the
	// model with the compiler's errors before the generation fails. Zero
	// means DefaultMaxRepairs (3); negative means none.
	MaxRepairs int
	// MaxToolResultBytes cuts longer tool results. Zero means
	// DefaultMaxToolResultBytes (16 KiB).
	MaxToolResultBytes int
	// MaxTools caps the tools one request declares. Zero, or more than
	// DefaultMaxTools (128, what hosted APIs accept), means DefaultMaxTools.
	// When the user's MCP tools do not fit, the relevant ones are declared
	// and find_tools searches the others.
	MaxTools int
	// MaxToolBytes caps the size of the tool definitions (JSON) one
	// request declares. Zero means DefaultMaxToolBytes (32 KiB).
	MaxToolBytes int
	// Temperature is sent with every request; nil leaves it to the endpoint.
	Temperature *float64
	// Logger receives one debug record per turn and tool call (names and
	// sizes, never contents). Nil discards.
	Logger *slog.Logger
	// Progress, if set, receives one short line per turn (the tools the
	// model called) and per draft (rejected or accepted), for a person to
	// watch. It never holds prompt or tool contents.
	Progress func(line string)
}

func (o Options) withDefaults() Options {
	if o.MaxTurns <= 0 {
		o.MaxTurns = DefaultMaxTurns
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.MaxRepairs == 0:
		o.MaxRepairs = DefaultMaxRepairs
	case o.MaxRepairs < 0:
		o.MaxRepairs = 0
	}
	if o.MaxToolResultBytes <= 0 {
		o.MaxToolResultBytes = DefaultMaxToolResultBytes
	}
	if o.MaxTools <= 0 || o.MaxTools > DefaultMaxTools {
		o.MaxTools = DefaultMaxTools
	}
	if o.MaxToolBytes <= 0 {
		o.MaxToolBytes = DefaultMaxToolBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// CaseStore is what the agent needs of the cases.
type CaseStore interface {
	FindCases(ctx context.Context, filter duet.CaseFilter) ([]*duet.Case, string, int, error)
	SaveDraftCase(ctx context.Context, c *duet.Case) error
}

// Deps are what the agent reads and writes. Cases is required; a nil
// field of the others turns its feature off: no asset tools, no generation
// record, no MCP tools (Invoker or Servers nil), no inspect_page.
type Deps struct {
	Cases       CaseStore
	Assets      duet.AssetStore
	Generations duet.GenerationStore
	Invoker     duet.Invoker        // the one exit to MCP servers
	Servers     duet.MCPAssetLister // the user's registered servers and archived tools
	Pages       PageInspector
	// CompilerOptions returns the compiler's options for cases authored by
	// user; nil means compiler.Options{}. When its Servers is nil, mcpCall
	// server names resolve through Servers.
	CompilerOptions func(ctx context.Context, user string) compiler.Options
}

// Agent writes test cases with an LLM. It is safe for concurrent use.
type Agent struct {
	cfg  llm.Config
	deps Deps
	opts Options
}

// New returns an agent that talks to the endpoint cfg describes. Returns
// LLM_NOT_CONFIGURED when cfg has no base URL or model, INVALID_ARGUMENT
// when it is malformed.
func New(cfg llm.Config, deps Deps, opts Options) (*Agent, error) {
	if _, err := llm.New(cfg); err != nil {
		return nil, err
	}
	if deps.Cases == nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "agent: no case store")
	}
	return &Agent{cfg: cfg, deps: deps, opts: opts.withDefaults()}, nil
}

// Request asks for one case.
type Request struct {
	User    string     // the author: assets, servers and tools are theirs
	Task    *duet.Task // a task User may see
	Goal    string     // what the case should prove; optional
	Skills  []string   // skill references (name or owner/name) to apply
	Prompt  string     // a prompt asset to start from; optional
	TraceID string     // "" means a new one
	// AllowTools names MCP tools the model may call in this generation
	// although they are not annotated readOnlyHint: "server/tool",
	// "server/*" or "*". By default only read-only tools are callable.
	AllowTools []string
	// AllowFlows names pairs of the user's MCP servers "FROM:TO" (a name
	// or "*" on each side) whose data may pass from one to the other in
	// this generation: once the model has read a result of FROM, it may
	// call the tools of TO. By default none: after reading a result of
	// one server, calls of another server's tools are refused.
	AllowFlows []string
}

// Refusal is a tool call the agent refused, with the reason the model
// read.
type Refusal struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Result is the outcome of a generation.
type Result struct {
	Case       *duet.Case       // the saved draft; nil when the generation failed
	Generation *duet.Generation // the record (also stored when Deps.Generations is set)
	// Flagged are the scan's security findings on the user's MCP tools
	// (instructions aimed at the model, hidden text) and on what they
	// returned during the generation (Path "result..."): that text was
	// withheld from the model. Show them to the user.
	Flagged []scan.Finding
	// Refused lists the tool calls the model made that were refused:
	// tools that are not read-only and not allowed, and calls that could
	// carry one server's data to another (AllowFlows).
	Refused []Refusal
}

// Generate runs the agent loop for req: the model explores with the tools,
// submits a case, the compiler validates it (errors go back to the model,
// at most Options.MaxRepairs times), and the valid case is saved as a draft
// of the task. A record of the generation is stored whatever the outcome;
// when the generation ran and failed, the Result (with the record and no
// case) comes back with the error.
//
// Errors: INVALID_ARGUMENT (a bad request), NOT_FOUND (a skill or prompt),
// GENERATION_FAILED (no valid case within the turn, token, repair or time
// limits), CONFLICT (the key became used meanwhile), and the LLM's
// RATE_LIMITED, TIMEOUT, CANCELLED and LLM_ERROR.
func (a *Agent) Generate(ctx context.Context, req Request) (*Result, error) {
	if req.User == "" || req.Task == nil || req.Task.ID == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a generation needs a user and a task")
	}
	if req.TraceID == "" {
		req.TraceID = duet.NewTraceID()
	}
	start := time.Now()
	gen := &duet.Generation{TaskID: req.Task.ID, User: req.User, Model: a.cfg.Model, Goal: strings.TrimSpace(req.Goal), TraceID: req.TraceID}
	client, err := llm.New(a.cfg)
	if err != nil {
		return nil, err
	}
	s := &session{agent: a, req: req, gen: gen, client: client, log: a.opts.Logger.With("trace", req.TraceID)}
	c, err := s.run(ctx)
	var flagged []scan.Finding
	if s.brief != nil {
		flagged = append(slices.Clone(s.brief.Flagged), s.resultFlags...)
	}

	st := client.Stats()
	gen.Attempts = st.Attempts
	gen.PromptTokens, gen.CompletionTokens, gen.TotalTokens = st.Usage.PromptTokens, st.Usage.CompletionTokens, st.Usage.TotalTokens
	gen.DurationMs = time.Since(start).Milliseconds()
	gen.Outcome = duet.OutcomeOK
	if err != nil {
		gen.Outcome, gen.ErrorMessage = duet.ErrorCode(err), duet.ErrorMessage(err)
	} else {
		gen.CaseID, gen.CaseVersion = c.ID, c.Version
	}
	if a.deps.Generations != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		rerr := a.deps.Generations.CreateGeneration(rctx, gen)
		cancel()
		if rerr != nil {
			a.opts.Logger.WarnContext(ctx, "agent: storing the generation record", "trace", req.TraceID, "err", rerr)
		}
	}
	return &Result{Case: c, Generation: gen, Flagged: flagged, Refused: s.refused}, err
}

// session is the state of one generation.
type session struct {
	agent  *Agent
	req    Request
	gen    *duet.Generation
	client *llm.Client
	log    *slog.Logger

	brief    *brief
	compile  compiler.Options
	keys     map[string]*duet.Case // the task's cases by key
	failures int                   // drafts that did not compile
	accepted *duet.Case
	refused  []Refusal // tool calls refused by the policy

	flows       *flowGuard
	resultFlags []scan.Finding // the screen's findings on tool results
	flagSeen    map[string]bool
}

// maxResultFlags bounds the findings on tool results a generation keeps.
const maxResultFlags = 100

// flag records a finding of the screen on a tool result (once per place)
// and tells the user.
func (s *session) flag(f scan.Finding) {
	key := f.Source + "\x00" + f.Tool + "\x00" + f.Rule + "\x00" + f.Path
	if s.flagSeen[key] || len(s.resultFlags) >= maxResultFlags {
		return
	}
	if s.flagSeen == nil {
		s.flagSeen = map[string]bool{}
	}
	s.flagSeen[key] = true
	s.resultFlags = append(s.resultFlags, f)
	s.agent.opts.Progress(fmt.Sprintf("warning: the result of %s/%s: %s (%s, %s); that text is withheld from the model", f.Source, f.Tool, f.Message, f.Rule, f.Path))
}

// refuse records a refused call.
func (s *session) refuse(ctx context.Context, tool, reason, why string) {
	s.refused = append(s.refused, Refusal{Tool: tool, Reason: reason})
	s.agent.opts.Progress(fmt.Sprintf("refused a call of %s: %s", tool, why))
	s.log.InfoContext(ctx, "agent: tool call refused", "tool", tool, "why", why)
}

var errStop = errors.New("agent: stop")

func (s *session) run(ctx context.Context) (c *duet.Case, err error) {
	a, o := s.agent, s.agent.opts
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, errStop)
	defer cancel()
	// Whatever step the time limit ends — reading the task, a tool call,
	// a model's turn — the generation ends with its own code.
	defer func() {
		if err != nil && duet.ErrorCode(err) != duet.CodeGenerationFailed && errors.Is(context.Cause(ctx), errStop) {
			err = duet.WrapError(duet.CodeGenerationFailed, err, "no valid case within the time limit of %s", o.Timeout)
		}
	}()

	b, err := gather(ctx, &a.deps, gatherInput{User: s.req.User, Task: s.req.Task, Goal: s.req.Goal, Skills: s.req.Skills, Prompt: s.req.Prompt})
	if err != nil {
		return nil, err
	}
	s.brief = b
	b.Policy.Allow = s.req.AllowTools
	b.Policy.Flag = s.flag
	flows, err := parseFlows(s.req.AllowFlows, b.Servers)
	if err != nil {
		return nil, err
	}
	s.flows = newFlowGuard(flows)
	for _, f := range b.Flagged {
		o.Progress(fmt.Sprintf("warning: %s/%s: %s (%s); its text is withheld from the model", f.Source, f.Tool, f.Message, f.Rule))
	}
	s.gen.Assets = b.assetRefs()
	s.keys = map[string]*duet.Case{}
	for _, c := range b.Cases {
		s.keys[c.Key] = c
	}
	if a.deps.CompilerOptions != nil {
		s.compile = a.deps.CompilerOptions(ctx, s.req.User)
	}
	if s.compile.Servers == nil && a.deps.Servers != nil {
		s.compile.Servers = ServerResolver(b.Servers)
	}

	reg := NewToolRegistry()
	platform := platformTools(&a.deps, b)
	if err := reg.Add(platform...); err != nil {
		return nil, err
	}
	var callable []*Tool
	if a.deps.Invoker != nil {
		var refused map[string]string
		callable, refused = MCPTools(b.Servers, a.deps.Invoker, s.req.User, s.req.TraceID, b.Policy)
		for _, t := range callable {
			// The model reads what the call returned: the server's data
			// is in the generation from then on.
			call := t.Call
			t.Call = func(ctx context.Context, raw json.RawMessage) (string, error) {
				defer s.flows.saw(t)
				return call(ctx, raw)
			}
		}
		if err := reg.Add(callable...); err != nil {
			return nil, err
		}
		for name, reason := range refused {
			reg.Refuse(name, reason)
		}
	}
	submit := s.submitTool()
	if err := reg.Add(submit); err != nil {
		return nil, err
	}
	offer, err := s.offer(reg, platform, submit, callable)
	if err != nil {
		return nil, err
	}

	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: b.systemPrompt(true)},
		{Role: llm.RoleUser, Content: b.userPrompt(false)},
	}
	for {
		tools := reg.LLMTools(offer.names()...)
		if s.gen.Turns >= o.MaxTurns {
			return nil, duet.Errorf(duet.CodeGenerationFailed, "no valid case within %d turns", o.MaxTurns)
		}
		if used := s.client.Stats().Usage.TotalTokens; used >= o.MaxTokens {
			return nil, duet.Errorf(duet.CodeGenerationFailed, "the token budget is spent (%d of %d) without a valid case", used, o.MaxTokens)
		}
		resp, err := s.client.Chat(ctx, llm.Request{Messages: msgs, Tools: tools, Temperature: o.Temperature, MaxTokens: o.MaxCompletionTokens})
		if err != nil {
			return nil, err
		}
		s.gen.Turns++
		if resp.Model != "" {
			s.gen.Model = resp.Model
		}
		msg := resp.Choices[0].Message
		msgs = append(msgs, msg)
		s.log.DebugContext(ctx, "agent: turn", "turn", s.gen.Turns, "tool_calls", len(msg.ToolCalls),
			"content_bytes", len(msg.Content), "tokens", resp.Usage.TotalTokens)

		if len(msg.ToolCalls) > 0 {
			var names []string
			for _, call := range msg.ToolCalls {
				names = append(names, call.Function.Name)
			}
			o.Progress(fmt.Sprintf("turn %d: %s", s.gen.Turns, strings.Join(names, ", ")))
			// The model wrote this answer's calls knowing the results
			// before it, not those of its own calls.
			read := s.flows.snapshot()
			for _, call := range msg.ToolCalls {
				s.gen.ToolCalls++
				var out string
				var ferr error
				if t, known := reg.Tool(call.Function.Name); known {
					ferr = s.flows.check(read, t)
				}
				switch {
				case reg.Refused(call.Function.Name):
					out = reg.Call(ctx, call.Function.Name, call.Function.Arguments, o.MaxToolResultBytes)
					s.refuse(ctx, call.Function.Name, strings.TrimPrefix(out, "error: "+string(duet.CodePermissionDenied)+": "), "it is not read-only")
				case ferr != nil:
					out = errorText(ferr)
					s.refuse(ctx, call.Function.Name, duet.ErrorMessage(ferr), "the model has read another MCP server's results in this generation (allow the pair with --allow-flow)")
				default:
					out = reg.Call(ctx, call.Function.Name, call.Function.Arguments, o.MaxToolResultBytes)
				}
				s.log.DebugContext(ctx, "agent: tool call", "tool", call.Function.Name, "result_bytes", len(out))
				msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: out})
				if s.accepted != nil {
					return s.save(ctx)
				}
			}
			if err := s.tooManyFailures(); err != nil {
				return nil, err
			}
			continue
		}

		// A plain answer: the case as YAML, or a reminder of what to do.
		o.Progress(fmt.Sprintf("turn %d: answer", s.gen.Turns))
		src := extractYAML(msg.Content)
		if src == "" {
			if msg.Content == "" && resp.Choices[0].FinishReason == "length" {
				return nil, duet.Errorf(duet.CodeGenerationFailed, "the model's answer was cut at its length limit")
			}
			if msg.Refusal != "" {
				return nil, duet.Errorf(duet.CodeGenerationFailed, "the model refused: %s", truncate(oneLine(msg.Refusal), 300))
			}
			s.reject()
			if err := s.tooManyFailures(); err != nil {
				return nil, err
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "That answer holds no case. Call " + ToolSubmitCase +
				" with the YAML of one case (title, key, steps)."})
			continue
		}
		if feedback := s.check(ctx, src); feedback != "" {
			if err := s.tooManyFailures(); err != nil {
				return nil, err
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: feedback})
			continue
		}
		return s.save(ctx)
	}
}

// offer builds the set of tools the requests declare (toolOffer): the
// platform tools and submit_case always; the callable MCP tools, the most
// relevant first; find_tools when they do not all fit or the instructions
// cannot list every tool.
func (s *session) offer(reg *ToolRegistry, platform []*Tool, submit *Tool, callable []*Tool) (*toolOffer, error) {
	b, o := s.brief, s.agent.opts
	var core []string
	for _, t := range platform {
		core = append(core, t.Name)
	}

	relevance := map[string]int{}
	var entries []*mcpEntry
	names := mcpToolNames(b.Servers)
	for i, srv := range b.Servers {
		for j, tool := range srv.Tools {
			name := names[i][j]
			entries = append(entries, &mcpEntry{srv: srv, tool: tool, name: name, callable: reg.Has(name)})
			relevance[name] = b.relevance(srv, tool)
		}
	}
	ranked := slices.Clone(callable)
	slices.SortStableFunc(ranked, func(x, y *Tool) int { return relevance[y.Name] - relevance[x.Name] })

	b.compact = len(b.serverSection(true)) > maxServerSectionBytes
	var offer *toolOffer
	find := findTool(entries, b.Policy.Withheld, func(names []string) { offer.found(names) })
	offer, err := newToolOffer(reg, core, []string{submit.Name}, ranked, relevance, o.MaxTools, o.MaxToolBytes, find, b.compact && len(entries) > 0)
	if err != nil {
		return nil, err
	}
	b.findTools = reg.Has(ToolFindTools)
	return offer, nil
}

// tooManyFailures fails the generation once more drafts failed than may be
// repaired.
func (s *session) tooManyFailures() error {
	if s.failures > s.agent.opts.MaxRepairs {
		return duet.Errorf(duet.CodeGenerationFailed, "no valid case after %d repairs (the last draft still has errors)", s.agent.opts.MaxRepairs)
	}
	return nil
}

// submitTool is submit_case: the model hands in its case.
func (s *session) submitTool() *Tool {
	return &Tool{
		Name: ToolSubmitCase,
		Description: "Submit the finished case. yaml is ONE case in Duet's YAML case format (title, key, steps). " +
			"The compiler checks it: you get its errors back to fix, or the case is accepted.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"yaml":{"type":"string","description":"the YAML of one case"}},"required":["yaml"]}`),
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			src := submittedSource(raw)
			if strings.TrimSpace(src) == "" {
				s.reject()
				return "", duet.Errorf(duet.CodeInvalidArgument, "submit_case needs yaml: the YAML text of one case")
			}
			if feedback := s.check(ctx, src); feedback != "" {
				return feedback, nil
			}
			return "Accepted: the case compiles and is saved as a draft.", nil
		},
	}
}

// submittedSource returns the case source in submit_case's arguments: the
// yaml string, or (for models that send the case as a JSON object) that
// object as JSON, which is YAML too.
func submittedSource(raw json.RawMessage) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	if y, ok := in["yaml"]; ok {
		var s string
		if json.Unmarshal(y, &s) == nil {
			return extractYAML(s)
		}
		if len(y) > 0 && y[0] == '{' {
			return string(y)
		}
		return ""
	}
	if _, ok := in["steps"]; ok {
		return string(raw)
	}
	return ""
}

// check compiles src for the task. It returns "" and sets s.accepted when
// the case is valid, else the feedback the model reads (and counts a
// failure).
func (s *session) check(ctx context.Context, src string) string {
	c, err := compiler.CompileCase(ctx, []byte(src), s.req.Task, s.compile)
	if err == nil {
		switch old, used := s.keys[c.Key]; {
		case used && old.Status != duet.CaseDraft:
			err = duet.Errorf(duet.CodeInvalidArgument, "key %q is already used by the %s case %q of this task; choose another key", c.Key, old.Status, c.Key)
		case used && old.CreatedBy != s.req.User:
			// Another author's draft is their proposal: never replaced.
			err = duet.Errorf(duet.CodeInvalidArgument, "key %q is already used by a draft of %s in this task; choose another key", c.Key, old.CreatedBy)
		}
	}
	if err != nil {
		s.reject()
		s.log.DebugContext(ctx, "agent: draft rejected", "failures", s.failures)
		n := 1
		var errs *compiler.Errors
		if errors.As(err, &errs) {
			n = len(errs.List)
		}
		s.agent.opts.Progress(fmt.Sprintf("draft rejected: %d error(s)", n))
		return "The case does not compile. Errors (line:column: message):\n" + duet.ErrorMessage(err) +
			"\nFix every error and submit the whole corrected case again."
	}
	s.accepted = c
	s.agent.opts.Progress(fmt.Sprintf("draft accepted: %q, %d steps", c.Key, len(c.Steps)))
	return ""
}

// reject counts a draft that is not a valid case, and the repair it asks
// for while repairs remain.
func (s *session) reject() {
	s.failures++
	if s.failures <= s.agent.opts.MaxRepairs {
		s.gen.Repairs++
	}
}

// save stores the accepted case as a draft of the task, written by the
// user: in a task shared with them, a proposal that only the owner makes a
// case of the suite.
func (s *session) save(ctx context.Context) (*duet.Case, error) {
	c := s.accepted
	c.TaskID, c.CreatedBy = s.req.Task.ID, s.req.User
	if err := s.agent.deps.Cases.SaveDraftCase(context.WithoutCancel(ctx), c); err != nil {
		return nil, err
	}
	return c, nil
}

var fenceRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```[ \t]*(?:ya?ml|YAML)?[ \t]*\r?\n(.*?)```") })

// extractYAML returns the case source in a model's text: the first fenced
// block that has steps (or the first fenced block), else the text itself
// when it looks like a case.
func extractYAML(text string) string {
	blocks := fenceRe().FindAllStringSubmatch(text, -1)
	for _, m := range blocks {
		if strings.Contains(m[1], "steps") {
			return m[1]
		}
	}
	if len(blocks) > 0 {
		return blocks[0][1]
	}
	t := strings.TrimSpace(text)
	if strings.Contains(t, "steps:") && (strings.HasPrefix(t, "title:") || strings.HasPrefix(t, "key:") || strings.HasPrefix(t, "steps:")) {
		return t + "\n"
	}
	return ""
}

// Summary describes g in one line: what it made and what it cost.
func Summary(g *duet.Generation) string {
	s := fmt.Sprintf("%d turns, %d tool calls, %d repairs; tokens %d (prompt %d, completion %d); %d requests; %dms",
		g.Turns, g.ToolCalls, g.Repairs, g.TotalTokens, g.PromptTokens, g.CompletionTokens, g.Attempts, g.DurationMs)
	if g.Model != "" {
		s = "model " + g.Model + ", " + s
	}
	return s
}
