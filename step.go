package duet

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

	HTTP    *HTTPStep    `json:"http,omitempty"`
	Assert  *AssertStep  `json:"assert,omitempty"`
	MCP     *MCPCallStep `json:"mcp,omitempty"`
	Set     *SetStep     `json:"set,omitempty"`
	Browser *BrowserStep `json:"browser,omitempty"`

	Evidence *EvidenceStep `json:"evidence,omitempty"` // assertScreenshot, assertAccessible, assertPerformance (evidence.go)
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
}
