package step

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

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

// Scope is what the earlier steps of a case make available to the next one.
type Scope struct {
	Vars     []string // variables saved so far, in order
	PageOpen bool     // an open step came before
}

// Save adds a variable.
func (s *Scope) Save(name string) {
	if !slices.Contains(s.Vars, name) {
		s.Vars = append(s.Vars, name)
	}
}

// Compiler is the state of one compilation that the compile functions of
// the kinds report to: the diagnostics found so far, the task the case
// belongs to and what its earlier steps made available. internal/compiler
// drives it over a suite file (the task, the cases, their post-run
// actions); Steps compiles a list of steps through the registry.
type Compiler struct {
	Ctx context.Context
	// Servers resolves mcpCall server names and checks tools. When nil,
	// only serverKey references are accepted and tools are not checked.
	Servers ServerResolver
	// Task is the task of the case being compiled (relative URLs need its
	// baseURL); nil when there is none.
	Task *duet.Task
	// Scope is what the steps compiled so far made available.
	Scope Scope
	// Flows finds the flows use steps name; nil when there are none.
	Flows FlowResolver
	// Hook marks the steps compiled as those of a hook (duet.Step.Hook);
	// "" for a case's own steps.
	Hook string
	// TestIDAttribute is the attribute a testId locator names (the task's
	// testIdAttribute); "" means data-testid.
	TestIDAttribute string
	// Files is the suite's folder, where an upload step reads its files;
	// nil when the source has no folder (it came over the network), and
	// an upload step cannot compile.
	Files fs.FS

	diags     []*Diagnostic
	flowChain []string // the flows being compiled, outermost first
}

// MaxStepTimeout bounds the timeout of one step.
const MaxStepTimeout = 10 * time.Minute

var (
	serverKeyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^mcp_[a-z0-9-]+_[0-9a-f]{8}$`) })
	identRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(identPattern) })
)

// identPattern is what a variable name looks like.
const identPattern = `^[A-Za-z_][A-Za-z0-9_]*$`

// Errf records an error at n (at 1:1 when n has no position).
func (c *Compiler) Errf(n *Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, n.Col
	}
	c.diags = append(c.diags, &Diagnostic{Line: line, Col: col, Message: fmt.Sprintf(format, args...)})
}

// Diagnostics returns the errors recorded so far, in the order found.
func (c *Compiler) Diagnostics() []*Diagnostic { return c.diags }

// NumErrors returns how many errors have been recorded so far.
func (c *Compiler) NumErrors() int { return len(c.diags) }

// mapping reports whether n is a mapping; when it is not, it records the
// error msg, and when it is, an error for every key not in allowed.
func (c *Compiler) mapping(n *Node, msg string, allowed ...string) bool {
	if n.Type != MapNode {
		c.Errf(n, "%s", msg)
		return false
	}
	c.AllowKeys(n, allowed...)
	return true
}

// optionalMapping reports whether n, the value of an optional key, is a
// mapping to read: not when it is missing or null, nor, with the error
// msg, when it is anything else.
func (c *Compiler) optionalMapping(n *Node, msg string) bool {
	if n == nil || n.Type == NullNode {
		return false
	}
	if n.Type != MapNode {
		c.Errf(n, "%s", msg)
		return false
	}
	return true
}

// AllowKeys records an error for every key of the mapping n not in allowed.
func (c *Compiler) AllowKeys(n *Node, allowed ...string) {
	for _, k := range n.Keys {
		ks, _ := k.Str()
		if !slices.Contains(allowed, ks) {
			c.Errf(k, "unknown key %q (allowed: %s)", ks, strings.Join(allowed, ", "))
		}
	}
}

// String returns the text of key in the mapping n: "" when it is missing or
// null (an error when required), an error when it is not a scalar.
func (c *Compiler) String(n *Node, key string, required bool) string {
	v := n.Get(key)
	if v == nil || v.Type == NullNode {
		if required {
			c.Errf(n, "missing key %s", key)
		}
		return ""
	}
	s, ok := v.Str()
	if !ok {
		c.Errf(v, "%s must be a string, got %s", key, v.Type)
		return ""
	}
	return s
}

// Timeout reads a duration (a string such as 5s, or milliseconds) of at
// most max, in milliseconds.
func (c *Compiler) Timeout(n *Node, max time.Duration) int64 {
	var d time.Duration
	switch v := n.Value.(type) {
	case int64:
		d = time.Duration(v) * time.Millisecond
	case uint64:
		d = time.Duration(v) * time.Millisecond
	case string:
		var err error
		d, err = time.ParseDuration(v)
		if err != nil {
			c.Errf(n, "timeout %q: use a duration such as 5s or 1500ms", v)
			return 0
		}
	default:
		c.Errf(n, "timeout must be a duration such as 5s")
		return 0
	}
	if d <= 0 || d > max {
		c.Errf(n, "timeout must be between 1ms and %s", max)
		return 0
	}
	return d.Milliseconds()
}

// Template checks a template string field against the scope.
func (c *Compiler) Template(n *Node, what, s string) {
	if err := eval.CheckTemplate(s, c.Scope.Vars); err != nil {
		c.Errf(n, "%s: %v", what, err)
	}
}

// SaveAs reads the name of a variable a step saves (nil n: none) and adds
// it to the scope.
func (c *Compiler) SaveAs(n *Node) string {
	if n == nil {
		return ""
	}
	s, _ := n.Str()
	if _, ok := n.Value.(string); !ok || !identRe().MatchString(s) {
		c.Errf(n, "saveAs must be a variable name (letters, digits, _), got %q", s)
		return ""
	}
	if slices.Contains(eval.Builtins, s) {
		c.Errf(n, "%q is a built-in variable; choose another name", s)
		return ""
	}
	if eval.IsFunction(s) {
		c.Errf(n, "%q is the name of an expression function (%s(...)), which would hide the variable; choose another name", s, s)
		return ""
	}
	c.Scope.Save(s)
	return s
}

// saveAsKey reads the variable a step saves its value to: the key as, or
// its older name saveAs (as wins when both are there). missing, when not
// "", is the problem recorded when neither is.
func (c *Compiler) saveAsKey(n *Node, missing string) string {
	as := n.Get("as")
	if as == nil {
		as = n.Get("saveAs")
	}
	if as == nil && missing != "" {
		c.Errf(n, "%s", missing)
	}
	return c.SaveAs(as)
}

// RelativeURL checks a URL a step opens or requests: relative to the
// task's baseURL, absolute http(s), or decided at run time.
func (c *Compiler) RelativeURL(n *Node, what, u string) {
	if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		if c.Task == nil || c.Task.BaseURL == "" {
			c.Errf(n, "%s %q is relative but the task has no baseURL", what, u)
		}
		return
	}
	if eval.IsTemplate(u) && strings.HasPrefix(u, "${") {
		return // decided at run time
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		c.Errf(n, "%s %q must start with / (relative to the task's baseURL) or be an absolute http(s) URL", what, u)
	}
}

// Steps compiles a list of steps, each through the registry entry of its
// kind, numbering them from 0. Errors are recorded; the steps that
// compiled are returned.
func (c *Compiler) Steps(n *Node) []duet.Step {
	var out []duet.Step
	for i, item := range n.Items {
		if st := c.Step(item, i); st != nil {
			out = append(out, *st)
		}
	}
	return out
}

// Step compiles one step: a mapping with exactly one kind key, plus the
// optional name and timeout. It returns nil when the step names no kind,
// or more than one.
func (c *Compiler) Step(n *Node, i int) *duet.Step {
	if n.Type != MapNode {
		c.Errf(n, "a step is a mapping with one step kind (%s)", kindNames())
		return nil
	}
	st := &duet.Step{Index: i, Line: n.Line}
	var (
		kind *Kind
		body *Node
		soft *Node // the soft key
	)
	for j, k := range n.Keys {
		ks, _ := k.Str()
		switch kk := Lookup(duet.StepKind(ks)); {
		case ks == "name":
			var ok bool
			if st.Name, ok = n.Vals[j].Str(); !ok && n.Vals[j].Type != NullNode {
				c.Errf(n.Vals[j], "name must be a string, got %s", n.Vals[j].Type)
			}
		case ks == "timeout":
			st.TimeoutMs = c.Timeout(n.Vals[j], MaxStepTimeout)
		case ks == "soft":
			v, ok := n.Vals[j].Value.(bool)
			if !ok {
				c.Errf(n.Vals[j], "soft must be true or false")
			}
			st.Soft = v
			soft = k
		case kk != nil:
			if body != nil {
				c.Errf(k, "a step has exactly one kind; found %s and %s", st.Kind, ks)
				return nil
			}
			kind, st.Kind, body = kk, kk.Name, n.Vals[j]
		default:
			c.Errf(k, "unknown step key %q (step kinds: %s; also name, timeout, soft)", ks, kindNames())
			return nil
		}
	}
	if body == nil {
		c.Errf(n, "the step names no kind (one of %s)", kindNames())
		return nil
	}
	st.Hook = c.Hook
	if soft != nil && !kind.Assertion {
		c.Errf(soft, "soft goes with an assertion (%s is not one)", kind.Name)
	}
	kind.Compile(c, st, body)
	if st.Name == "" {
		st.Name = kind.title(st)
	}
	names, err := secretNames(st)
	if err != nil {
		c.Errf(body, "%s", duet.ErrorMessage(err))
	}
	st.Secrets = names
	return st
}
