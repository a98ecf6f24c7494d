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
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	yaml "github.com/goccy/go-yaml"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// Diagnostic is one error at a position of the source.
type Diagnostic struct {
	Line    int
	Col     int
	Message string
}

func (d *Diagnostic) Error() string { return fmt.Sprintf("%d:%d: %s", d.Line, d.Col, d.Message) }

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
type ToolInfo struct {
	Name        string
	InputSchema json.RawMessage
}

// ServerResolver resolves the MCP servers a case refers to, as its author
// registered them.
type ServerResolver interface {
	// ResolveServer returns the serverKey for a server name (or a serverKey)
	// written in a case. Returns NOT_FOUND.
	ResolveServer(ctx context.Context, ref string) (serverKey string, err error)
	// Tool returns an archived tool of the server; known is false when the
	// server's catalog has not been archived, so the tool cannot be checked.
	// Returns MCP_TOOL_NOT_FOUND when the catalog is known and lacks the tool.
	Tool(ctx context.Context, serverKey, tool string) (info *ToolInfo, known bool, err error)
}

// Options configure compilation. The zero value is valid.
type Options struct {
	// Servers resolves mcpCall server names and checks tools. When nil, only
	// serverKey references are accepted and tools are not checked.
	Servers ServerResolver
	// ValidDevice checks a device preset name; nil accepts any.
	ValidDevice func(name string) error
}

var (
	serverKeyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^mcp_[a-z0-9-]+_[0-9a-f]{8}$`) })
	identRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	keyRe       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`) })
)

const maxStepTimeout = 10 * time.Minute

type compiler struct {
	ctx   context.Context
	opts  Options
	diags []*Diagnostic
}

func (c *compiler) errf(n *node, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.line > 0 {
		line, col = n.line, n.col
	}
	c.diags = append(c.diags, &Diagnostic{Line: line, Col: col, Message: fmt.Sprintf(format, args...)})
}

// CompileSuite compiles a suite file: a task and its cases. file names the
// source in error messages. Returns INVALID_ARGUMENT wrapping *Errors.
func CompileSuite(ctx context.Context, src []byte, file string, opts Options) (*duet.Suite, error) {
	c := &compiler{ctx: ctx, opts: opts}
	root, err := parseYAML(src)
	if err != nil {
		return nil, c.fail(file, yamlError(err))
	}
	if root.kind != kindMap {
		c.errf(root, "a suite file is a mapping with the keys task and cases")
		return nil, c.fail(file)
	}
	c.allowKeys(root, "task", "cases")
	s := &duet.Suite{}
	tn := root.get("task")
	if tn == nil {
		c.errf(root, "missing key task")
	} else {
		c.task(tn, &s.Task)
		s.Schedules = c.schedules(tn.get("schedule"))
	}
	cn := root.get("cases")
	switch {
	case cn == nil:
		c.errf(root, "missing key cases")
	case cn.kind != kindSeq:
		c.errf(cn, "cases must be a list, got %s", cn.kind)
	default:
		seen := map[string]*node{}
		for _, item := range cn.items {
			cs := c.caseNode(item, &s.Task)
			if cs == nil {
				continue
			}
			if prev, dup := seen[cs.Key]; dup {
				c.errf(item, "case key %q is already used by the case at line %d", cs.Key, prev.line)
				continue
			}
			seen[cs.Key] = item
			s.Cases = append(s.Cases, cs)
		}
	}
	if len(c.diags) > 0 {
		return nil, c.fail(file)
	}
	return s, nil
}

// CompileCase compiles the source of one case (the form of an item of a
// suite's cases list) for task. Returns INVALID_ARGUMENT wrapping *Errors.
func CompileCase(ctx context.Context, src []byte, task *duet.Task, opts Options) (*duet.Case, error) {
	c := &compiler{ctx: ctx, opts: opts}
	root, err := parseYAML(src)
	if err != nil {
		return nil, c.fail("", yamlError(err))
	}
	cs := c.caseNode(root, task)
	if len(c.diags) > 0 || cs == nil {
		return nil, c.fail("")
	}
	return cs, nil
}

func (c *compiler) fail(file string, extra ...*Diagnostic) error {
	list := append(slices.Clone(c.diags), extra...)
	slices.SortStableFunc(list, func(a, b *Diagnostic) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	errs := &Errors{File: file, List: list}
	return &duet.Error{Code: duet.CodeInvalidArgument, Message: errs.Error(), Err: errs}
}

func (c *compiler) allowKeys(n *node, allowed ...string) {
	for _, k := range n.keys {
		ks, _ := k.str()
		if !slices.Contains(allowed, ks) {
			c.errf(k, "unknown key %q (allowed: %s)", ks, strings.Join(allowed, ", "))
		}
	}
}

func (c *compiler) stringField(n *node, key string, required bool) string {
	v := n.get(key)
	if v == nil || v.kind == kindNull {
		if required {
			c.errf(n, "missing key %s", key)
		}
		return ""
	}
	s, ok := v.str()
	if !ok {
		c.errf(v, "%s must be a string, got %s", key, v.kind)
		return ""
	}
	return s
}

func (c *compiler) task(n *node, t *duet.Task) {
	if n.kind != kindMap {
		c.errf(n, "task must be a mapping, got %s", n.kind)
		return
	}
	c.allowKeys(n, "name", "description", "baseURL", "baseUrl", "device", "browser", "sharedWith", "postRun", "schedule")
	t.Name = strings.TrimSpace(c.stringField(n, "name", true))
	if t.Name != "" && (len(t.Name) > 100 || strings.ContainsAny(t.Name, "\n\r\t")) {
		c.errf(n.get("name"), "task name must be one line of at most 100 characters")
	}
	t.Description = c.stringField(n, "description", false)
	base := c.stringField(n, "baseURL", false)
	bn := n.get("baseURL")
	if base == "" {
		base, bn = c.stringField(n, "baseUrl", false), n.get("baseUrl")
	}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.errf(bn, "baseURL must be an absolute http(s) URL, got %q", base)
		}
		t.BaseURL = strings.TrimRight(base, "/")
	}
	if d := c.stringField(n, "device", false); d != "" {
		if c.opts.ValidDevice != nil {
			if err := c.opts.ValidDevice(d); err != nil {
				c.errf(n.get("device"), "%s", duet.ErrorMessage(err))
			}
		}
		t.Device = d
	}
	// browser: a remote DevTools endpoint the task's browser steps run in;
	// stored with the device preset as "PRESET@URL" (docs/devices.md).
	if b := c.stringField(n, "browser", false); b != "" {
		d := t.Device + "@" + b
		if strings.HasPrefix(t.Device, "android:") || strings.Contains(t.Device, "@") {
			c.errf(n.get("browser"), "browser cannot be combined with device %q", t.Device)
		} else if c.opts.ValidDevice != nil {
			if err := c.opts.ValidDevice(d); err != nil {
				c.errf(n.get("browser"), "%s", duet.ErrorMessage(err))
			}
		}
		t.Device = d
	}
	if pr := n.get("postRun"); pr != nil {
		t.PostRun = c.postRun(pr)
	}
	if sw := n.get("sharedWith"); sw != nil {
		t.SharedWith = []string{}
		if sw.kind != kindSeq {
			c.errf(sw, "sharedWith must be a list of user ids")
		}
		for _, it := range sw.items {
			s, ok := it.str()
			if !ok || strings.TrimSpace(s) == "" {
				c.errf(it, "sharedWith entries must be user ids")
				continue
			}
			t.SharedWith = append(t.SharedWith, strings.TrimSpace(s))
		}
	}
}

// slug makes a case key from a title.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 60 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// scope tracks what earlier steps of a case make available.
type scope struct {
	vars     []string
	pageOpen bool
}

func (s *scope) save(name string) {
	if !slices.Contains(s.vars, name) {
		s.vars = append(s.vars, name)
	}
}

func (c *compiler) caseNode(n *node, task *duet.Task) *duet.Case {
	if n.kind != kindMap {
		c.errf(n, "a case must be a mapping with title and steps, got %s", n.kind)
		return nil
	}
	before := len(c.diags)
	c.allowKeys(n, "key", "title", "steps", "timeout")
	cs := &duet.Case{Title: strings.TrimSpace(c.stringField(n, "title", true))}
	cs.Key = c.stringField(n, "key", false)
	if cs.Key == "" {
		cs.Key = slug(cs.Title)
	} else if !keyRe().MatchString(cs.Key) {
		c.errf(n.get("key"), "key %q must be lower-case letters, digits, '.', '_' or '-' (at most 100)", cs.Key)
	}
	if cs.Key == "" && cs.Title != "" {
		c.errf(n.get("title"), "cannot derive a key from this title; add key:")
	}
	if tn := n.get("timeout"); tn != nil {
		cs.TimeoutMs = c.timeout(tn, 24*time.Hour)
	}
	sn := n.get("steps")
	switch {
	case sn == nil:
		c.errf(n, "missing key steps")
	case sn.kind != kindSeq || len(sn.items) == 0:
		c.errf(sn, "steps must be a non-empty list")
	default:
		sc := &scope{}
		for i, item := range sn.items {
			if st := c.step(item, i, task, sc); st != nil {
				cs.Steps = append(cs.Steps, *st)
			}
		}
	}
	if len(c.diags) > before {
		return nil
	}
	src, err := yaml.MarshalWithOptions(n.ordered(), yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil {
		c.errf(n, "cannot re-encode the case: %v", err)
		return nil
	}
	cs.Source = string(src)
	// The hash ignores source lines, so moving a case within its file is
	// not a change.
	unlined := slices.Clone(cs.Steps)
	for i := range unlined {
		unlined[i].Line = 0
	}
	stepsJSON, _ := json.Marshal(unlined)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", cs.Source, cs.TimeoutMs)
	h.Write(stepsJSON)
	cs.SourceHash = hex.EncodeToString(h.Sum(nil))
	return cs
}

func (c *compiler) timeout(n *node, max time.Duration) int64 {
	var d time.Duration
	switch v := n.value.(type) {
	case int64:
		d = time.Duration(v) * time.Millisecond
	case uint64:
		d = time.Duration(v) * time.Millisecond
	case string:
		var err error
		d, err = time.ParseDuration(v)
		if err != nil {
			c.errf(n, "timeout %q: use a duration such as 5s or 1500ms", v)
			return 0
		}
	default:
		c.errf(n, "timeout must be a duration such as 5s")
		return 0
	}
	if d <= 0 || d > max {
		c.errf(n, "timeout must be between 1ms and %s", max)
		return 0
	}
	return d.Milliseconds()
}

// stepKinds are the keys that name a step's kind.
var stepKinds = []duet.StepKind{
	duet.StepHTTP, duet.StepAssert, duet.StepMCPCall, duet.StepSet,
	duet.StepOpen, duet.StepClick, duet.StepFill, duet.StepPress, duet.StepSelect, duet.StepWaitFor,
	duet.StepAssertText, duet.StepAssertVisible, duet.StepAssertURL, duet.StepExtract, duet.StepScreenshot,
}

func kindNames() string {
	var s []string
	for _, k := range stepKinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func (c *compiler) step(n *node, i int, task *duet.Task, sc *scope) *duet.Step {
	if n.kind != kindMap {
		c.errf(n, "a step is a mapping with one step kind (%s)", kindNames())
		return nil
	}
	st := &duet.Step{Index: i, Line: n.line}
	var body *node
	for j, k := range n.keys {
		ks, _ := k.str()
		switch {
		case ks == "name":
			st.Name, _ = n.vals[j].str()
		case ks == "timeout":
			st.TimeoutMs = c.timeout(n.vals[j], maxStepTimeout)
		case slices.Contains(stepKinds, duet.StepKind(ks)):
			if body != nil {
				c.errf(k, "a step has exactly one kind; found %s and %s", st.Kind, ks)
				return nil
			}
			st.Kind, body = duet.StepKind(ks), n.vals[j]
		default:
			c.errf(k, "unknown step key %q (step kinds: %s; also name, timeout)", ks, kindNames())
			return nil
		}
	}
	if body == nil {
		c.errf(n, "the step names no kind (one of %s)", kindNames())
		return nil
	}
	if st.Kind.IsBrowser() {
		c.browser(st, body, task, sc)
	} else {
		switch st.Kind {
		case duet.StepHTTP:
			c.http(st, body, task, sc)
		case duet.StepAssert:
			c.assert(st, body, sc)
		case duet.StepSet:
			c.set(st, body, sc)
		case duet.StepMCPCall:
			c.mcpCall(st, body, sc)
		}
	}
	if st.Name == "" {
		st.Name = defaultName(st)
	}
	return st
}

func defaultName(st *duet.Step) string {
	switch {
	case st.HTTP != nil:
		return st.HTTP.Method + " " + st.HTTP.URL
	case st.Assert != nil:
		return "assert " + st.Assert.Expr
	case st.MCP != nil:
		srv := st.MCP.ServerName
		if srv == "" {
			srv = st.MCP.ServerKey
		}
		return "mcpCall " + srv + "/" + st.MCP.ToolName
	case st.Set != nil:
		return "set " + strings.Join(sortedKeys(st.Set.Vars), ", ")
	case st.Browser != nil:
		b := st.Browser
		for _, s := range []string{b.URL, b.Selector, b.Key, b.Text, b.URLContains, b.URLMatches, b.Equals, b.Contains, b.Matches, b.From} {
			if s != "" {
				return string(st.Kind) + " " + s
			}
		}
	}
	return string(st.Kind)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// template checks a template string field against the scope.
func (c *compiler) template(n *node, what, s string, sc *scope) {
	if err := eval.CheckTemplate(s, sc.vars); err != nil {
		c.errf(n, "%s: %v", what, err)
	}
}

func (c *compiler) saveAs(n *node, sc *scope) string {
	if n == nil {
		return ""
	}
	s, ok := n.str()
	if !ok || !identRe().MatchString(s) {
		c.errf(n, "saveAs must be a variable name (letters, digits, _), got %q", s)
		return ""
	}
	if slices.Contains(eval.Builtins, s) {
		c.errf(n, "%q is a built-in variable; choose another name", s)
		return ""
	}
	if eval.IsFunction(s) {
		c.errf(n, "%q is the name of an expression function (%s(...)), which would hide the variable; choose another name", s, s)
		return ""
	}
	sc.save(s)
	return s
}

func (c *compiler) relativeURL(n *node, what, u string, task *duet.Task) {
	if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		if task == nil || task.BaseURL == "" {
			c.errf(n, "%s %q is relative but the task has no baseURL", what, u)
		}
		return
	}
	if eval.IsTemplate(u) && strings.HasPrefix(u, "${") {
		return // decided at run time
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		c.errf(n, "%s %q must start with / (relative to the task's baseURL) or be an absolute http(s) URL", what, u)
	}
}

func (c *compiler) http(st *duet.Step, n *node, task *duet.Task, sc *scope) {
	h := &duet.HTTPStep{Method: "GET"}
	st.HTTP = h
	if s, ok := n.str(); ok {
		// Shorthand: "GET /path".
		f := strings.Fields(s)
		switch len(f) {
		case 1:
			h.URL = f[0]
		case 2:
			h.Method, h.URL = strings.ToUpper(f[0]), f[1]
		default:
			c.errf(n, `http shorthand is "METHOD URL", got %q`, s)
			return
		}
	} else if n.kind == kindMap {
		c.allowKeys(n, "method", "url", "path", "headers", "body", "json", "saveAs")
		if m := c.stringField(n, "method", false); m != "" {
			h.Method = strings.ToUpper(m)
		}
		h.URL = c.stringField(n, "url", false)
		if h.URL == "" {
			h.URL = c.stringField(n, "path", false)
		}
		if h.URL == "" {
			c.errf(n, "http needs url (or path)")
		}
		if hn := n.get("headers"); hn != nil {
			if hn.kind != kindMap {
				c.errf(hn, "headers must be a mapping of name: value")
			} else {
				h.Headers = map[string]string{}
				for j, k := range hn.keys {
					ks, _ := k.str()
					v, ok := hn.vals[j].str()
					if !ok {
						c.errf(hn.vals[j], "header %s must be a string", ks)
						continue
					}
					c.template(hn.vals[j], "header "+ks, v, sc)
					h.Headers[ks] = v
				}
			}
		}
		if bn := n.get("body"); bn != nil {
			s, ok := bn.str()
			if !ok {
				c.errf(bn, "body must be a string; use json: for a JSON body")
			}
			c.template(bn, "body", s, sc)
			h.Body = s
		}
		if jn := n.get("json"); jn != nil {
			if n.get("body") != nil {
				c.errf(jn, "use either body or json, not both")
			}
			h.JSON = jn.plain()
			if err := eval.CheckValue(h.JSON, sc.vars); err != nil {
				c.errf(jn, "json: %v", err)
			}
		}
		h.SaveAs = c.saveAs(n.get("saveAs"), sc)
	} else {
		c.errf(n, "http must be a mapping (method, url, headers, body|json, saveAs) or \"METHOD URL\"")
		return
	}
	switch h.Method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
	default:
		c.errf(n, "unsupported HTTP method %q", h.Method)
	}
	if h.URL != "" {
		c.template(n, "url", h.URL, sc)
		c.relativeURL(n, "url", h.URL, task)
	}
}

func (c *compiler) assert(st *duet.Step, n *node, sc *scope) {
	a := &duet.AssertStep{}
	st.Assert = a
	if s, ok := n.str(); ok {
		a.Expr = s
	} else if n.kind == kindMap {
		c.allowKeys(n, "expr", "message")
		a.Expr = c.stringField(n, "expr", true)
		a.Message = c.stringField(n, "message", false)
	} else {
		c.errf(n, "assert must be an expression or {expr, message}")
		return
	}
	if a.Expr != "" {
		if err := eval.Check(a.Expr, sc.vars, true); err != nil {
			c.errf(n, "assert: %v", err)
		}
	}
}

func (c *compiler) set(st *duet.Step, n *node, sc *scope) {
	if n.kind != kindMap || len(n.keys) == 0 {
		c.errf(n, "set must be a mapping of variable: expression")
		return
	}
	s := &duet.SetStep{Vars: map[string]string{}}
	st.Set = s
	// Each expression sees the variables before this step, in key order.
	known := slices.Clone(sc.vars)
	for j, k := range n.keys {
		name, _ := k.str()
		ex, ok := n.vals[j].str()
		if !ok {
			c.errf(n.vals[j], "set %s: the value must be an expression", name)
			continue
		}
		if err := eval.Check(ex, known, false); err != nil {
			c.errf(n.vals[j], "set %s: %v", name, err)
		}
		if c.saveAs(k, sc) != "" {
			s.Vars[name] = ex
		}
	}
}
