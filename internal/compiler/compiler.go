// Package compiler is Duet's one deterministic compiler: it turns the
// declarative source of a suite or case (YAML, written by a person or by the
// agent) into validated steps. Nobody writes step JSON by hand. The same
// source always compiles to the same steps; every error carries a line and a
// column.
//
// The format is documented in docs/suite-format.md.
package compiler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	yaml "github.com/goccy/go-yaml"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/step"
	"github.com/duet-test/duet/internal/trace"
)

// Diagnostic is one error at a position of the source.
type Diagnostic = step.Diagnostic

// Errors is every problem found in one source file.
type Errors struct {
	File string
	List []*Diagnostic
}

func (e *Errors) Error() string {
	var b strings.Builder
	for i, d := range e.List {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			b.WriteString(e.File + ":")
		}
		b.WriteString(d.Error())
	}
	return b.String()
}

// ToolInfo is what the compiler knows of an archived MCP tool.
type ToolInfo = step.ToolInfo

// ServerResolver resolves the MCP servers a case refers to, as its author
// registered them.
type ServerResolver = step.ServerResolver

// Options configure compilation. The zero value is valid.
type Options struct {
	// Servers resolves mcpCall server names and checks tools. When nil, only
	// serverKey references are accepted and tools are not checked.
	Servers ServerResolver
	// ValidDevice checks a device preset name; nil accepts any.
	ValidDevice func(name string) error
	// Flows finds the flow assets use steps name (as the suite's author
	// may read them); nil: only the suite's own flows.
	Flows FlowAssets
	// Files is the suite's folder, where each: reads its data files and
	// upload steps their files (duet apply -f sets it to the file's
	// directory); nil when the source came without one (over the API,
	// from the agent): rows must then be inline.
	Files fs.FS
	// MaxRetries and MaxParallel are the deployment's bounds on retries:
	// and parallel: (DUET_MAX_RETRIES, DUET_MAX_PARALLEL); 0 means the
	// format's own (MaxRetries, MaxParallel).
	MaxRetries  int
	MaxParallel int
	// TestIDAttribute is the task's testIdAttribute for CompileCase (a
	// suite's own task: key sets it for CompileSuite); "" data-testid.
	TestIDAttribute string
}

var (
	keyRe      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`) })
	attrNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,99}$`) })
)

// compiler compiles one source: the task, the cases and their post-run
// actions here, the steps through the step registry.
type compiler struct {
	*step.Compiler
	opts Options
	// saved are the sessions the suite's cases compiled so far save
	// (saveSession): a case's session: must name one of them.
	saved map[string]bool
	// scheduleTags are the tags the task's schedules select by, checked
	// against the cases' once they are compiled.
	scheduleTags []scheduleTag
}

func newCompiler(ctx context.Context, opts Options) *compiler {
	c := &compiler{Compiler: &step.Compiler{Ctx: ctx, Servers: opts.Servers, Files: opts.Files, TestIDAttribute: opts.TestIDAttribute}, opts: opts}
	c.Flows = &flowResolver{assets: opts.Flows}
	return c
}

// CompileSuite compiles a suite file: a task and its cases. file names the
// source in error messages. Returns INVALID_ARGUMENT wrapping *Errors.
func CompileSuite(ctx context.Context, src []byte, file string, opts Options) (*duet.Suite, error) {
	c := newCompiler(ctx, opts)
	root, derr := step.Parse(src)
	if derr != nil {
		return nil, c.fail(file, derr)
	}
	if root.Type != step.MapNode {
		c.Errf(root, "a suite file is a mapping with the keys task and cases")
		return nil, c.fail(file)
	}
	c.AllowKeys(root, keyNames(suiteKeys)...)
	s := &duet.Suite{}
	// The suite's flows first: the task's hooks and the cases use them.
	flows := c.flows(root.Get("flows"))
	c.Flows = &flowResolver{suite: flows, assets: c.opts.Flows}
	tn := root.Get("task")
	if tn == nil {
		c.Errf(root, "missing key task")
	} else {
		c.task(tn, &s.Task)
		s.Schedules = c.schedules(tn.Get("schedule"))
	}
	// Each flow's steps, on their own, so that a flow no case uses is
	// checked too (a problem is reported once however often it is used).
	for _, name := range slices.Sorted(maps.Keys(flows)) {
		c.Task, c.Scope = c.compileTask(&s.Task), step.Scope{PageOpen: true}
		for _, p := range flows[name].Params {
			c.Scope.Save(p.Name)
		}
		c.Steps(flows[name].Steps)
	}
	cn := root.Get("cases")
	switch {
	case cn == nil:
		c.Errf(root, "missing key cases")
	case cn.Type != step.SeqNode:
		c.Errf(cn, "cases must be a list, got %s", cn.Type)
	default:
		seen := map[string]*step.Node{}
		for _, item := range cn.Items {
			for _, cs := range c.caseNode(item, &s.Task, true) {
				if prev, dup := seen[cs.Key]; dup {
					c.Errf(item, "case key %q is already used by the case at line %d", cs.Key, prev.Line)
					continue
				}
				seen[cs.Key] = item
				s.Cases = append(s.Cases, cs)
			}
		}
	}
	c.checkScheduleTags(s.Cases)
	if c.NumErrors() == 0 {
		c.checkEnvRefs(root, &s.Task)
	}
	if c.NumErrors() > 0 {
		return nil, c.fail(file)
	}
	return s, nil
}

// CompileCase compiles the source of one case (the form of an item of a
// suite's cases list) for task. Returns INVALID_ARGUMENT wrapping *Errors.
func CompileCase(ctx context.Context, src []byte, task *duet.Task, opts Options) (*duet.Case, error) {
	c := newCompiler(ctx, opts)
	root, derr := step.Parse(src)
	if derr != nil {
		return nil, c.fail("", derr)
	}
	cases := c.caseNode(root, task, false)
	if c.NumErrors() > 0 || len(cases) != 1 {
		return nil, c.fail("")
	}
	return cases[0], nil
}

func (c *compiler) fail(file string, extra ...*Diagnostic) error {
	list := dedupe(append(slices.Clone(c.Diagnostics()), extra...))
	slices.SortStableFunc(list, func(a, b *Diagnostic) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	errs := &Errors{File: file, List: list}
	return &duet.Error{Code: duet.CodeInvalidArgument, Message: errs.Error(), Err: errs}
}

func (c *compiler) task(n *step.Node, t *duet.Task) {
	if n.Type != step.MapNode {
		c.Errf(n, "task must be a mapping, got %s", n.Type)
		return
	}
	c.AllowKeys(n, keyNames(taskKeys)...)
	t.Name = strings.TrimSpace(c.String(n, "name", true))
	if t.Name != "" && (len(t.Name) > 100 || strings.ContainsAny(t.Name, "\n\r\t")) {
		c.Errf(n.Get("name"), "task name must be one line of at most 100 characters")
	}
	t.Description = c.String(n, "description", false)
	base := c.String(n, "baseURL", false)
	bn := n.Get("baseURL")
	if base == "" {
		base, bn = c.String(n, "baseUrl", false), n.Get("baseUrl")
	}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.Errf(bn, "baseURL must be an absolute http(s) URL, got %q", base)
		}
		t.BaseURL = strings.TrimRight(base, "/")
	}
	if d := c.String(n, "device", false); d != "" {
		if c.opts.ValidDevice != nil {
			if err := c.opts.ValidDevice(d); err != nil {
				c.Errf(n.Get("device"), "%s", duet.ErrorMessage(err))
			}
		}
		t.Device = d
	}
	// browser: a remote DevTools endpoint the task's browser steps run in;
	// stored with the device preset as "PRESET@URL" (docs/devices.md).
	if b := c.String(n, "browser", false); b != "" {
		d := t.Device + "@" + b
		if strings.HasPrefix(t.Device, "android:") || strings.Contains(t.Device, "@") {
			c.Errf(n.Get("browser"), "browser cannot be combined with device %q", t.Device)
		} else if c.opts.ValidDevice != nil {
			if err := c.opts.ValidDevice(d); err != nil {
				c.Errf(n.Get("browser"), "%s", duet.ErrorMessage(err))
			}
		}
		t.Device = d
	}
	if pr := n.Get("postRun"); pr != nil {
		t.PostRun = c.postRun(pr)
	}
	c.environments(n, t)
	c.taskHooks(n, t)
	c.taskRunSettings(n, t)
	if tm := c.String(n, "trace", false); tm != "" {
		if _, err := trace.ParseMode(tm); err != nil {
			c.Errf(n.Get("trace"), "%s", duet.ErrorMessage(err))
		}
		t.Trace = tm
	}
	if a := c.String(n, "testIdAttribute", false); a != "" {
		if !attrNameRe().MatchString(a) {
			c.Errf(n.Get("testIdAttribute"), "testIdAttribute %q is not an attribute name (such as data-test)", a)
		}
		c.TestIDAttribute = a
	}
	if sw := n.Get("sharedWith"); sw != nil {
		t.SharedWith = []string{}
		if sw.Type != step.SeqNode {
			c.Errf(sw, "sharedWith must be a list of user ids")
		}
		for _, it := range sw.Items {
			s, ok := it.Str()
			if !ok || strings.TrimSpace(s) == "" {
				c.Errf(it, "sharedWith entries must be user ids")
				continue
			}
			t.SharedWith = append(t.SharedWith, strings.TrimSpace(s))
		}
	}
}

// slug makes a case key from a title.
func slug(s string) string { return duet.Slug(s, 60) }

// caseNode compiles one case of a suite (or, suite false, a case compiled
// on its own for task): the cases it makes — one, or one per row of its
// data (each:).
func (c *compiler) caseNode(n *step.Node, task *duet.Task, suite bool) []*duet.Case {
	if n.Type != step.MapNode {
		c.Errf(n, "a case must be a mapping with title and steps, got %s", n.Type)
		return nil
	}
	before := c.NumErrors()
	c.AllowKeys(n, keyNames(caseKeys)...)
	cs := &duet.Case{Title: strings.TrimSpace(c.String(n, "title", true))}
	cs.Key = c.String(n, "key", false)
	keyGiven := cs.Key != ""
	var rows []map[string]any
	if en := n.Get("each"); en != nil {
		if !suite {
			c.Errf(en, "each: makes a case of each row: write it in a suite file (duet apply), not in one case")
		} else {
			rows = c.rows(en)
		}
	}
	c.caseKey(n, cs, rows != nil)
	if tn := n.Get("timeout"); tn != nil {
		cs.TimeoutMs = c.Timeout(tn, maxCaseTimeout)
	}
	c.caseRunSettings(n, task, cs)
	for _, k := range []string{duet.HookBeforeAll, duet.HookAfterAll} {
		if v := n.Get(k); v != nil {
			c.Errf(v, "%s runs once per run: declare it under task:, not in a case (a case has beforeEach and afterEach)", k)
		}
	}
	sn := n.Get("steps")
	switch {
	case sn == nil:
		c.Errf(n, "missing key steps")
	case sn.Type != step.SeqNode || len(sn.Items) == 0:
		c.Errf(sn, "steps must be a non-empty list")
	default:
		cs.Steps = c.caseSteps(n, sn, task, suite)
	}
	if c.NumErrors() > before {
		return nil
	}
	src, err := yaml.MarshalWithOptions(n.Ordered(), yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil {
		c.Errf(n, "cannot re-encode the case: %v", err)
		return nil
	}
	cs.Source = string(src)
	cases := []*duet.Case{cs}
	if rows != nil {
		if cases = c.rowCases(n, cs, keyGiven, rows); cases == nil {
			return nil
		}
	}
	for _, cs := range cases {
		cs.SourceHash = sourceHash(cs)
	}
	return cases
}

// caseKey checks the key of case n (cs), or derives it from its title:
// a template, in a case made of rows (each:), is checked per row.
func (c *compiler) caseKey(n *step.Node, cs *duet.Case, each bool) {
	switch {
	case cs.Key == "":
		cs.Key = slug(cs.Title)
	case each && eval.IsTemplate(cs.Key):
	case !keyRe().MatchString(cs.Key):
		c.Errf(n.Get("key"), "key %q must be lower-case letters, digits, '.', '_' or '-' (at most 100)", cs.Key)
	}
	if cs.Key == "" && cs.Title != "" {
		c.Errf(n.Get("title"), "cannot derive a key from this title; add key:")
	}
}

// caseSteps compiles the steps of case n (sn, its steps:) with the hooks
// around them: the task's and the case's beforeEach first, after the
// session the case starts from, the afterEach steps last. It notes the
// sessions the case saves, for the cases after it.
func (c *compiler) caseSteps(n, sn *step.Node, task *duet.Task, suite bool) []duet.Step {
	// A case starts with what the task's beforeAll and beforeEach
	// saved (and the page its beforeEach opened), and, made from a
	// row, the row.
	c.Task = c.compileTask(task)
	c.Scope = step.Scope{Vars: slices.Clone(task.HookSaves), PageOpen: opensPage(task.BeforeEach)}
	if n.Get("each") != nil {
		c.Scope.Save("row")
	}
	var steps []duet.Step
	if ses := n.Get("session"); ses != nil {
		// The case starts from a saved session: before its hooks
		// open a page.
		if name, _ := ses.Str(); suite && name != "" && !c.saved[name] {
			c.Errf(ses, "session %s: no case before this one saves it (the cases run in order: add saveSession: %s to a case above)", name, name)
		}
		if st := c.Step(&step.Node{Type: step.MapNode, Line: ses.Line, Col: ses.Col, Keys: []*step.Node{{Type: step.ScalarNode, Value: "session", Line: ses.Line, Col: ses.Col}}, Vals: []*step.Node{ses}}, 0); st != nil {
			steps = append(steps, *st)
		}
	}
	steps = append(steps, task.BeforeEach...)
	steps = append(steps, c.hookSteps(n, duet.HookBeforeEach)...)
	steps = append(steps, c.Steps(sn)...)
	steps = append(steps, c.hookSteps(n, duet.HookAfterEach)...)
	steps = append(steps, task.AfterEach...)
	steps = renumber(steps)
	duet.WalkSteps(steps, func(st *duet.Step) bool {
		if st.Kind == "saveSession" && st.Browser != nil {
			if c.saved == nil {
				c.saved = map[string]bool{}
			}
			c.saved[st.Browser.Session] = true
		}
		return true
	})
	return steps
}

// sourceHash identifies a version of a case: its source, time limit, data
// row, retries, tags and steps, source lines aside (moving a case within its file is not
// a change).
func sourceHash(cs *duet.Case) string {
	unlined := slices.Clone(cs.Steps)
	for i := range unlined {
		unlined[i].Line = 0
	}
	stepsJSON, _ := json.Marshal(unlined)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", cs.Source, cs.TimeoutMs)
	h.Write(stepsJSON)
	if cs.Row != nil {
		row, _ := json.Marshal(cs.Row)
		h.Write([]byte("\x00row\x00"))
		h.Write(row)
	}
	if cs.Retries != 0 || len(cs.Tags) > 0 {
		// (a case without either hashes as before)
		fmt.Fprintf(h, "\x00retries\x00%d\x00tags\x00%q", cs.Retries, cs.Tags)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// opensPage reports whether steps open a page.
func opensPage(steps []duet.Step) bool {
	return !duet.WalkSteps(steps, func(st *duet.Step) bool { return st.Kind != duet.StepOpen })
}
