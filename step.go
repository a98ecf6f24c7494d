package duet

import "encoding/json"

// StepKind names what a compiled step does.
type StepKind string

// Step kinds: the names steps are stored and reported under (wire values:
// add, never rename). What a kind is — its schema, how it compiles and how it
// runs — is its entry in the step registry (internal/step), where a new kind
// may name itself without a constant here. The compiler (internal/compiler)
// is the only producer of steps.
const (
	StepHTTP          StepKind = "http"          // an HTTP request; saves status, headers and body
	StepAssert        StepKind = "assert"        // a boolean expression over saved variables
	StepMCPCall       StepKind = "mcpCall"       // a call to a registered MCP server's tool, as the executor
	StepSet           StepKind = "set"           // set variables from expressions
	StepOpen          StepKind = "open"          // navigate the browser
	StepClick         StepKind = "click"         // click an element
	StepFill          StepKind = "fill"          // type into a field
	StepPress         StepKind = "press"         // press a key
	StepSelect        StepKind = "select"        // choose an option of a <select>
	StepWaitFor       StepKind = "waitFor"       // wait for a selector, text or URL
	StepAssertText    StepKind = "assertText"    // assert an element's text
	StepAssertVisible StepKind = "assertVisible" // assert an element is (not) visible
	StepAssertURL     StepKind = "assertURL"     // assert the page URL
	StepExtract       StepKind = "extract"       // save text, an attribute or a URL part to a variable
	StepScreenshot    StepKind = "screenshot"    // save a screenshot artifact
	StepIf            StepKind = "if"            // run one list of steps or another, on an expression or an element's state
	StepRepeat        StepKind = "repeat"        // run steps a number of times, while or until a condition holds (bounded)
	StepForEach       StepKind = "forEach"       // run steps once per item of a list (bounded)
	StepUse           StepKind = "use"           // run a reusable flow with parameters
)

// Hooks: the steps a task (or a case) runs around its cases. A step of a
// case's hook is stored among the case's steps with its Hook set;
// beforeAll and afterAll run once per run (Task.BeforeAll, Task.AfterAll).
const (
	HookBeforeAll  = "beforeAll"
	HookBeforeEach = "beforeEach"
	HookAfterEach  = "afterEach"
	HookAfterAll   = "afterAll"
)

// FailurePolicy says what a failed mcpCall step does to its case.
type FailurePolicy string

// Failure policies.
const (
	FailRequired FailurePolicy = "required" // the case fails
	FailOptional FailurePolicy = "optional" // recorded; the case goes on
)

// Step is one compiled, validated step of a case. String fields documented as
// templates may contain ${expression} parts evaluated over saved variables when
// the step runs.
type Step struct {
	Index     int      `json:"index"`
	Kind      StepKind `json:"kind"`
	Name      string   `json:"name"`
	Line      int      `json:"line,omitempty"` // line in the suite file
	TimeoutMs int64    `json:"timeoutMs,omitempty"`
	// Hook names the hook the step belongs to (HookBeforeEach,
	// HookAfterEach, or, in Task.BeforeAll and Task.AfterAll, those
	// hooks); "" for a step of the case itself. The steps of an afterEach
	// hook run whatever became of the case before them: failed, timed out
	// or cancelled.
	Hook string `json:"hook,omitempty"`
	// Secrets are the names of the executor's secrets the step reads
	// (${secrets.NAME}), found by the compiler: the step fails with
	// SECRET_NOT_FOUND, naming the first one missing, when the executor
	// has not set it.
	Secrets []string `json:"secrets,omitempty"`
	// Soft makes a failed assertion a soft failure: it is recorded and the
	// case goes on, and the case fails at its end.
	Soft bool `json:"soft,omitempty"`

	HTTP    *HTTPStep    `json:"http,omitempty"`
	Assert  *AssertStep  `json:"assert,omitempty"`
	MCP     *MCPCallStep `json:"mcp,omitempty"`
	Set     *SetStep     `json:"set,omitempty"`
	Browser *BrowserStep `json:"browser,omitempty"`
	AI      *AIStep      `json:"ai,omitempty"`
	If      *IfStep      `json:"if,omitempty"`
	Loop    *LoopStep    `json:"loop,omitempty"` // repeat and forEach
	Use     *UseStep     `json:"use,omitempty"`

	Evidence *EvidenceStep `json:"evidence,omitempty"` // assertScreenshot, assertAccessible, assertPerformance (evidence.go)
}

// Children returns the lists of steps a flow step (if, repeat, forEach,
// use) runs in its turn; nil for any other step.
func (s *Step) Children() [][]Step {
	switch {
	case s.If != nil:
		return [][]Step{s.If.Then, s.If.Else}
	case s.Loop != nil:
		return [][]Step{s.Loop.Steps}
	case s.Use != nil:
		return [][]Step{s.Use.Steps}
	}
	return nil
}

// WalkSteps calls fn for each step of steps and, depth first, for each
// step the flow steps among them run, until fn returns false.
func WalkSteps(steps []Step, fn func(*Step) bool) bool {
	for i := range steps {
		if !fn(&steps[i]) {
			return false
		}
		for _, list := range steps[i].Children() {
			if !WalkSteps(list, fn) {
				return false
			}
		}
	}
	return true
}

// Condition is what an if step tests, or a repeat loop's while or until:
// an expression over the variables, or the state of an element of the page
// as it is (without waiting).
type Condition struct {
	Expr    string `json:"expr,omitempty"`    // a boolean expression
	Visible string `json:"visible,omitempty"` // a selector: true when an element it matches is visible (template)
	Hidden  string `json:"hidden,omitempty"`  // a selector: true when no element it matches is visible (template)
}

// IfStep runs Then when its condition holds, else Else.
type IfStep struct {
	Condition
	Then []Step `json:"then"`
	Else []Step `json:"else,omitempty"`
}

// Loop kinds.
const (
	LoopTimes   = "times"
	LoopWhile   = "while"
	LoopUntil   = "until"
	LoopForEach = "forEach"
)

// LoopStep runs Steps again and again: Times times, while or until a
// condition holds (repeat), or once per item of a list (forEach). It never
// runs more than Max iterations: a loop that would go on fails with
// LOOP_LIMIT.
type LoopStep struct {
	Mode  string     `json:"mode"`            // LoopTimes, LoopWhile, LoopUntil or LoopForEach
	Times int        `json:"times,omitempty"` // LoopTimes
	Cond  *Condition `json:"cond,omitempty"`  // LoopWhile (checked before each iteration), LoopUntil (after each)
	In    string     `json:"in,omitempty"`    // LoopForEach: an expression whose value is a list
	As    string     `json:"as,omitempty"`    // LoopForEach: the variable each item is saved to
	Index string     `json:"index,omitempty"` // the variable the iteration's number (from 1) is saved to
	Max   int        `json:"max"`             // the bound on iterations
	Steps []Step     `json:"steps"`
}

// UseStep runs a reusable flow: a flow of the suite, or a flow asset, as it
// was when the case was compiled (its steps are copied in, so a later
// version of the asset changes no case until it is applied again).
type UseStep struct {
	Flow    string         `json:"flow"`              // the name the case used
	Asset   string         `json:"asset,omitempty"`   // "owner/name" of a flow asset; "" for a flow of the suite
	Version int            `json:"version,omitempty"` // the asset's version
	With    map[string]any `json:"with,omitempty"`    // parameter → value; string leaves are templates over the caller's variables
	Steps   []Step         `json:"steps"`
}

// AIStep holds the parameters of a step a model answers at run time
// (aiAssert, aiQuery, aiWaitFor) from the page's accessibility tree.
type AIStep struct {
	// Prompt says, in words, what must hold (aiAssert, aiWaitFor) or what to
	// read (aiQuery). A template.
	Prompt string `json:"prompt"`
	// Schema is the JSON Schema the answer of an aiQuery must validate
	// against.
	Schema json.RawMessage `json:"schema,omitempty"`
	// SaveAs is the variable an aiQuery saves its answer to.
	SaveAs string `json:"saveAs,omitempty"`
	// MaxTokens is the step's token budget (prompt and answers of all its
	// model calls); 0 means the configured default.
	MaxTokens int `json:"maxTokens,omitempty"`
	// IntervalMs is how long an aiWaitFor waits between looks at a page
	// that has not changed; 0 means 1s.
	IntervalMs int64 `json:"intervalMs,omitempty"`
	// Value is what an aiFill types into the field the model finds (a
	// template, rendered at run time: the model never sees it).
	Value string `json:"value,omitempty"`
	// TestIDAttr is the task's test id attribute (testIdAttribute), for
	// the locators an acting step resolves to; "" means data-testid.
	TestIDAttr string `json:"testIdAttr,omitempty"`
	// MaxRounds bounds the look-and-act rounds of an ai step; 0 means the
	// default (8).
	MaxRounds int `json:"maxRounds,omitempty"`
}

// HTTPStep is an HTTP request. The response is saved to the variable SaveAs
// as {status, headers, body, durationMs}; body is parsed JSON when the
// response is JSON, else text.
type HTTPStep struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`               // template; "/..." is relative to the task's base URL
	Headers map[string]string `json:"headers,omitempty"` // values are templates
	Body    string            `json:"body,omitempty"`    // template
	JSON    any               `json:"json,omitempty"`    // JSON body; string leaves are templates
	SaveAs  string            `json:"saveAs,omitempty"`
}

// AssertStep fails its case unless Expr evaluates to true.
type AssertStep struct {
	Expr    string `json:"expr"`
	Message string `json:"message,omitempty"`
}

// SetStep sets variables to the values of expressions, in key order.
type SetStep struct {
	Vars map[string]string `json:"vars"` // name -> expression
}

// MCPCallStep calls a tool of a registered MCP server as the executor of the
// run. The task stores only the serverKey and the tool name, never a
// connection or a credential. The result is saved to SaveAs as
// {content, structuredContent, isError, text}.
type MCPCallStep struct {
	ServerKey     string             `json:"serverKey"`
	ServerName    string             `json:"serverName,omitempty"` // as written by the author, for display
	ToolName      string             `json:"toolName"`
	InputBindings map[string]Binding `json:"inputBindings"`
	SaveAs        string             `json:"saveAs,omitempty"`
	FailurePolicy FailurePolicy      `json:"failurePolicy"`
}

// BindingSource says where a binding takes its value from.
type BindingSource string

// Binding sources.
const (
	BindValue     BindingSource = "value"      // a fixed value (string leaves are templates)
	BindVar       BindingSource = "var"        // an earlier step's variable, with a path
	BindPageURL   BindingSource = "page.url"   // a query parameter or a path segment of the page URL
	BindPageTitle BindingSource = "page.title" // the page title
	BindPageText  BindingSource = "page.text"  // the text of an element
	BindPageAttr  BindingSource = "page.attr"  // an attribute of an element
)

// Binding supplies one argument of an mcpCall step.
type Binding struct {
	Source   BindingSource `json:"source"`
	Value    any           `json:"value,omitempty"`    // BindValue
	Path     string        `json:"path,omitempty"`     // BindVar: "order.structuredContent.status"; BindPageURL: query parameter name
	Segment  *int          `json:"segment,omitempty"`  // BindPageURL: path segment (0 first, -1 last)
	Selector string        `json:"selector,omitempty"` // BindPageText, BindPageAttr
	Attr     string        `json:"attr,omitempty"`     // BindPageAttr
}

// BrowserStep holds the parameters of every browser step kind; each kind uses
// the fields its documentation names. Strings are templates.
type BrowserStep struct {
	URL      string `json:"url,omitempty"`      // open: relative to the task's base URL when it starts with "/"
	Selector string `json:"selector,omitempty"` // click, fill, press, select, waitFor, assertText, assertVisible, extract
	Value    string `json:"value,omitempty"`    // fill, select
	Key      string `json:"key,omitempty"`      // press

	// waitFor: any of Selector, Text, URLContains, URLMatches.
	Text        string `json:"text,omitempty"`
	URLContains string `json:"urlContains,omitempty"`
	URLMatches  string `json:"urlMatches,omitempty"`

	// assertText and assertURL: one of Equals, Contains, Matches.
	Equals   string `json:"equals,omitempty"`
	Contains string `json:"contains,omitempty"`
	Matches  string `json:"matches,omitempty"`

	Visible *bool `json:"visible,omitempty"` // assertVisible: want visible (default true)

	// extract: From is "text", "attr", "value", "url", "url.query", "url.segment" or "title".
	From    string `json:"from,omitempty"`
	Attr    string `json:"attr,omitempty"`
	Param   string `json:"param,omitempty"`
	Segment *int   `json:"segment,omitempty"`
	SaveAs  string `json:"saveAs,omitempty"`

	FullPage bool `json:"fullPage,omitempty"` // screenshot

	// Locator finds the element of an element step written with more than
	// a CSS selector (role, text, label, ...); Selector is then empty. A
	// step written with a CSS selector alone keeps it in Selector, and acts
	// on the first element it matches, as before locators existed.
	Locator *Locator `json:"locator,omitempty"`
	// Not inverts an assertion: it holds when the condition does not.
	Not bool `json:"not,omitempty"`

	Button    string            `json:"button,omitempty"`    // click: left (default), right or middle
	Modifiers []string          `json:"modifiers,omitempty"` // click, dblclick: keys held (Shift, Control, Alt, Meta)
	DelayMs   int64             `json:"delayMs,omitempty"`   // type: the pause between keys
	Files     []UploadFile      `json:"files,omitempty"`     // upload: the files, read from the suite's folder when it compiled
	To        *Locator          `json:"to,omitempty"`        // dragTo: the drop target
	Count     *int              `json:"count,omitempty"`     // assertCount
	Property  string            `json:"property,omitempty"`  // assertCSS: the CSS property
	Expr      string            `json:"expr,omitempty"`      // evaluate: a JavaScript expression (not a template)
	Args      map[string]string `json:"args,omitempty"`      // evaluate: values (templates) the expression reads as args.NAME
	Dialog    string            `json:"dialog,omitempty"`    // onDialog: accept or dismiss; assertDialog: alert, confirm, prompt or beforeunload (any when "")
	Tab       int               `json:"tab,omitempty"`       // switchTo: the tab's number, 1 the first
	Frame     []*Locator        `json:"frame,omitempty"`     // frame: the iframes, outermost first; none: the top page
	Emulate   *Emulation        `json:"emulate,omitempty"`   // emulate
	Direction string            `json:"direction,omitempty"` // history: back, forward or reload
	Route     *Route            `json:"route,omitempty"`     // route (route.go)
	Request   *RequestMatch     `json:"request,omitempty"`   // waitForResponse, expectRequest
	Session   string            `json:"session,omitempty"`   // saveSession, session: the saved session's name
}

// Locator finds elements of a page by what a person sees — a role and an
// accessible name, a text, a label — or by a CSS selector or an XPath.
// Exactly one of CSS, XPath, Role, Text, Label, Placeholder, Alt, Title and
// TestID is set; Name goes with Role. Text values (Name, Text, Label,
// Placeholder, Alt, Title, TestID, HasText) are templates; one written
// /PATTERN/ (flags i, s, m may follow) is a regular expression. Otherwise a
// text matches as a substring, ignoring case and runs of spaces, or, with
// Exact, as the whole text (TestID always matches whole). See
// docs/suite-format.md, "Locators".
type Locator struct {
	CSS         string `json:"css,omitempty"`
	XPath       string `json:"xpath,omitempty"`
	Role        string `json:"role,omitempty"` // an ARIA role: button, link, heading, textbox, checkbox, ...
	Name        string `json:"name,omitempty"` // the accessible name (with Role)
	Text        string `json:"text,omitempty"`
	Label       string `json:"label,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
	Alt         string `json:"alt,omitempty"`
	Title       string `json:"title,omitempty"`
	TestID      string `json:"testId,omitempty"`
	// TestIDAttr is the attribute TestID names (the task's
	// testIdAttribute); "" means data-testid.
	TestIDAttr string `json:"testIdAttr,omitempty"`
	Exact      bool   `json:"exact,omitempty"`

	// Within finds the elements inside the elements it matches.
	Within *Locator `json:"within,omitempty"`
	// Has keeps the elements that contain an element it matches.
	Has *Locator `json:"has,omitempty"`
	// HasText keeps the elements whose text matches.
	HasText string `json:"hasText,omitempty"`
	// Nth picks one of the matches: 0 the first, -1 the last.
	Nth *int `json:"nth,omitempty"`
}

// UploadFile is a file an upload step sets on a file input.
type UploadFile struct {
	Name string `json:"name"`           // the file's base name
	Type string `json:"type,omitempty"` // its MIME type
	Data []byte `json:"data"`           // its content
}

// Emulation is what an emulate step changes of the case's page. Zero
// fields are left as they are.
type Emulation struct {
	Width       int       `json:"width,omitempty"` // the viewport, CSS pixels
	Height      int       `json:"height,omitempty"`
	Geolocation *GeoPoint `json:"geolocation,omitempty"`
	Locale      string    `json:"locale,omitempty"`      // a BCP 47 tag: de-DE, ja-JP
	Timezone    string    `json:"timezone,omitempty"`    // an IANA name: Europe/Berlin
	ColorScheme string    `json:"colorScheme,omitempty"` // light or dark
}

// GeoPoint is a position on Earth.
type GeoPoint struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Accuracy  float64 `json:"accuracy,omitempty"` // metres; 0 means 10
}
