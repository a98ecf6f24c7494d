// Package scan checks the quality of MCP tool descriptions — Duet's own
// catalog and the archived tools of registered servers — and measures how
// much of a server's tools a task's cases exercise.
//
// A scan reads each tool as tools/list describes it and reports findings,
// each with a stable rule name, a severity and the place it was found:
//
//   - quality: a description that says what the tool does (and when to use
//     it), every parameter described, every enum option explained;
//   - portability: schemas every major client accepts — no bare true/false
//     schemas, no type arrays such as ["null", "string"], no remote $ref, no
//     schema that constrains nothing, an object input schema, and tool names
//     within the limits of chat APIs (the same schema rules as MCP
//     Inspector's --strict mode);
//   - security: descriptions that carry instructions aimed at the model
//     (tool poisoning: "before answering, call set_order_status ..."),
//     invisible characters, and references to another server's tools.
//     A Screener applies the same rules to what a tool returns.
//
// Coverage (coverage.go) compares a task's mcpCall steps with a server's
// archived tools: which tools, parameters and enum options the cases use.
//
// The package imports only the standard library and the root package.
package scan

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/duet-test/duet"
)

// Severity says how bad a finding is. Values are wire values.
type Severity string

// Severities.
const (
	Error   Severity = "error"   // a client rejects the tool, or the text is hostile to the model
	Warning Severity = "warning" // a client may drop a constraint, or a model is left guessing
)

// Category groups rules.
type Category string

// Categories.
const (
	Quality     Category = "quality"
	Portability Category = "portability"
	Security    Category = "security"
)

// Rule names. Values are wire values: add, never rename.
const (
	RuleNameInvalid          = "name-invalid"           // error: not ^[A-Za-z0-9_-]{1,64}$ (OpenAI, Anthropic)
	RuleNameLeadingDigit     = "name-leading-digit"     // warning: Gemini wants a letter or '_' first
	RuleDescriptionMissing   = "description-missing"    // error: no description
	RuleDescriptionShort     = "description-short"      // warning: too short to say what and when
	RuleParamUndescribed     = "param-undescribed"      // warning: a parameter without a description
	RuleEnumUnexplained      = "enum-unexplained"       // warning: an enum option its description does not explain
	RuleInputNotObject       = "input-not-object"       // error: inputSchema is not {"type":"object"}
	RuleBooleanSchema        = "boolean-schema"         // error: bare true/false where a schema is expected
	RuleTypeUnion            = "type-union"             // warning: "type" is an array
	RuleRemoteRef            = "remote-ref"             // warning: $ref outside the document
	RuleUntypedSchema        = "untyped-schema"         // warning: a schema that constrains nothing
	RuleModelInstructions    = "model-instructions"     // error: instructions aimed at the model
	RuleHiddenText           = "hidden-text"            // error: invisible or direction-changing characters, HTML comments
	RuleCrossServerReference = "cross-server-reference" // error: names another server's tool
)

// Rules lists every rule with its category and severity.
var Rules = []struct {
	Name     string
	Category Category
	Severity Severity
	Doc      string
}{
	{RuleNameInvalid, Portability, Error, "tool name must match ^[A-Za-z0-9_-]{1,64}$ (the limit of OpenAI and Anthropic tool names)"},
	{RuleNameLeadingDigit, Portability, Warning, "Gemini function names start with a letter or '_'"},
	{RuleDescriptionMissing, Quality, Error, "a tool needs a description: models choose tools by it"},
	{RuleDescriptionShort, Quality, Warning, "a description should say what the tool does and when to use it (at least 8 words)"},
	{RuleParamUndescribed, Quality, Warning, "every parameter of the input schema needs a description"},
	{RuleEnumUnexplained, Quality, Warning, "each enum option should be explained: named in the parameter's description, or a oneOf of const with descriptions"},
	{RuleInputNotObject, Portability, Error, "an input schema is a JSON object schema ({\"type\":\"object\"})"},
	{RuleBooleanSchema, Portability, Error, "bare true/false where a schema object is expected"},
	{RuleTypeUnion, Portability, Warning, "\"type\" as an array (e.g. [\"null\",\"string\"]): Gemini-style function declarations take one type"},
	{RuleRemoteRef, Portability, Warning, "$ref outside the document: clients do not fetch remote schemas"},
	{RuleUntypedSchema, Portability, Warning, "a schema with no validation keyword accepts anything (the object spelling of true)"},
	{RuleModelInstructions, Security, Error, "text that gives the model orders (call another tool first, ignore instructions, hide things from the user)"},
	{RuleHiddenText, Security, Error, "invisible characters, direction overrides or HTML comments a person does not see but the model reads"},
	{RuleCrossServerReference, Security, Error, "a description names a tool of another server: a tool should describe itself only"},
}

// Tool is one tool as tools/list describes it: the fields of an archived
// tool (duet.MCPTool), with the scanner's methods.
type Tool duet.MCPTool

// ReadOnly reports whether the tool's annotations say readOnlyHint: true.
func (t *Tool) ReadOnly() bool { return ReadOnlyHint(t.Annotations) }

// ReadOnlyHint reports whether MCP tool annotations (JSON) say
// readOnlyHint: true. Missing or unreadable annotations are not read-only.
func ReadOnlyHint(annotations json.RawMessage) bool {
	var a struct {
		ReadOnly bool `json:"readOnlyHint"`
	}
	return len(annotations) > 0 && json.Unmarshal(annotations, &a) == nil && a.ReadOnly
}

// Source is a set of tools scanned together: Duet's own catalog or one
// registered server.
type Source struct {
	Name      string `json:"name"`                // "duet" or the server's registered name
	ServerKey string `json:"serverKey,omitempty"` // "" for Duet's own catalog
	Tools     []Tool `json:"-"`
	// CatalogHash and SyncedAt name a registered server's archived catalog
	// (duet.MCPServer), when known.
	CatalogHash string     `json:"catalogHash,omitempty"`
	SyncedAt    *time.Time `json:"syncedAt,omitempty"`
}

// Finding is one problem a scan found.
type Finding struct {
	Source   string   `json:"source"`
	Tool     string   `json:"tool"`
	Rule     string   `json:"rule"`
	Category Category `json:"category"`
	Severity Severity `json:"severity"`
	// Path is where: "description", "name", or a schema path such as
	// "inputSchema.properties.status".
	Path    string `json:"path"`
	Message string `json:"message"`
	// Excerpt is the flagged text (security rules), escaped and cut.
	Excerpt string `json:"excerpt,omitempty"`
}

// SourceReport is the scan of one source.
type SourceReport struct {
	Name      string    `json:"name"`
	ServerKey string    `json:"serverKey,omitempty"`
	Tools     int       `json:"tools"`
	Errors    int       `json:"errors"`
	Warnings  int       `json:"warnings"`
	Findings  []Finding `json:"findings"`
}

// add appends f and counts it by its severity.
func (sr *SourceReport) add(f Finding) {
	sr.Findings = append(sr.Findings, f)
	if f.Severity == Error {
		sr.Errors++
	} else {
		sr.Warnings++
	}
}

// Report is the result of a scan.
type Report struct {
	Sources  []*SourceReport `json:"sources"`
	Errors   int             `json:"errors"`
	Warnings int             `json:"warnings"`
}

// Clean reports whether the scan found nothing.
func (r *Report) Clean() bool { return r.Errors == 0 && r.Warnings == 0 }

// Flagged returns the findings of the security category, by source and
// tool: the tools whose text must not reach a model as it is.
func (r *Report) Flagged() []Finding {
	var out []Finding
	for _, s := range r.Sources {
		for _, f := range s.Findings {
			if f.Category == Security {
				out = append(out, f)
			}
		}
	}
	return out
}

// ownersOf maps each tool name to the sources that have it.
func ownersOf(sources []Source) map[string][]string {
	owners := map[string][]string{}
	for _, s := range sources {
		for _, t := range s.Tools {
			if !slices.Contains(owners[t.Name], s.Name) {
				owners[t.Name] = append(owners[t.Name], s.Name)
			}
		}
	}
	return owners
}

// Scan checks every tool of every source. Sources are scanned together so
// that a description naming another source's tool is found.
func Scan(sources []Source) *Report {
	owners := ownersOf(sources)
	rep := &Report{Sources: []*SourceReport{}}
	for _, s := range sources {
		sr := &SourceReport{Name: s.Name, ServerKey: s.ServerKey, Tools: len(s.Tools), Findings: []Finding{}}
		for i := range s.Tools {
			sc := &scanner{source: s.Name, tool: &s.Tools[i], owners: owners}
			sc.run()
			for _, f := range sc.findings {
				sr.add(f)
			}
		}
		rep.Errors += sr.Errors
		rep.Warnings += sr.Warnings
		rep.Sources = append(rep.Sources, sr)
	}
	return rep
}

type scanner struct {
	source   string
	tool     *Tool
	owners   map[string][]string
	findings []Finding
}

func (s *scanner) add(rule string, path, excerpt, format string, args ...any) {
	for _, r := range Rules {
		if r.Name == rule {
			s.findings = append(s.findings, Finding{Source: s.source, Tool: s.tool.Name, Rule: rule, Category: r.Category,
				Severity: r.Severity, Path: path, Message: fmt.Sprintf(format, args...), Excerpt: excerpt})
			return
		}
	}
	panic("scan: unknown rule " + rule)
}

var (
	nameRe      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
	minDescWord = 8
)

func (s *scanner) run() {
	t := s.tool
	switch {
	case !nameRe().MatchString(t.Name):
		s.add(RuleNameInvalid, "name", "", "tool name %q does not match ^[A-Za-z0-9_-]{1,64}$: OpenAI and Anthropic refuse it", clip(t.Name, 80))
	case t.Name[0] >= '0' && t.Name[0] <= '9':
		s.add(RuleNameLeadingDigit, "name", "", "tool name %q starts with a digit: Gemini function names start with a letter or '_'", t.Name)
	}
	desc := strings.TrimSpace(t.Description)
	switch {
	case desc == "":
		s.add(RuleDescriptionMissing, "description", "", "the tool has no description: a model cannot tell what it does or when to use it")
	case len(strings.Fields(desc)) < minDescWord:
		s.add(RuleDescriptionShort, "description", "", "the description has %d words: say what the tool does, what it returns and when to use it (at least %d words)",
			len(strings.Fields(desc)), minDescWord)
	}
	s.text("title", t.Title)
	s.text("description", t.Description)

	in := parseSchema(t.InputSchema)
	if m, ok := in.(map[string]any); !ok || m["type"] != "object" {
		s.add(RuleInputNotObject, "inputSchema", "", `the input schema must be an object schema with "type": "object" (MCP requires it; clients refuse others)`)
	}
	s.portable("inputSchema", in, "", "")
	if in != nil {
		s.params("inputSchema", in, 0)
	}
	if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
		s.portable("outputSchema", parseSchema(t.OutputSchema), "", "")
	}
}

func parseSchema(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// ---- portability: the rules of MCP Inspector's --strict mode ----

var (
	booleanValued = []string{"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
	subKeywords   = []string{"items", "contains", "not", "propertyNames", "if", "then", "else", "additionalProperties",
		"unevaluatedProperties", "additionalItems", "unevaluatedItems", "contentSchema"}
	subArrayKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	subMapKeywords   = []string{"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"}
	constraining     = []string{"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding", "contentSchema", "maxItems", "minItems",
		"uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required", "dependentRequired",
		"allOf", "anyOf", "oneOf", "not", "items", "prefixItems", "contains", "additionalItems", "unevaluatedItems", "properties",
		"patternProperties", "additionalProperties", "unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies",
		"$ref", "$dynamicRef", "$recursiveRef"}
)

const maxDepth = 64

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// portable walks a schema as MCP Inspector's strict mode does.
func (s *scanner) portable(schema string, node any, path, keyword string) {
	s.walk(schema, node, path, keyword, 0)
}

func (s *scanner) walk(schema string, node any, path, keyword string, depth int) {
	if depth > maxDepth || node == nil {
		return
	}
	where := join(schema, path)
	if b, ok := node.(bool); ok {
		if slices.Contains(booleanValued, keyword) {
			return
		}
		s.add(RuleBooleanSchema, where, "", "bare %t where a schema object is expected: declare what the value is, e.g. {\"type\":\"object\"} for a free-form object", b)
		return
	}
	m, ok := node.(map[string]any)
	if !ok {
		return
	}
	if types, ok := m["type"].([]any); ok {
		s.add(RuleTypeUnion, where, "", "\"type\" is an array (%s): split it into anyOf branches of one type each, or make the property optional", compact(types))
	}
	if ref, ok := m["$ref"].(string); ok && ref != "" && !strings.HasPrefix(ref, "#") && !declaresID(m, 0) {
		s.add(RuleRemoteRef, where, "", "$ref %q points outside this schema: inline it or move it into $defs", clip(ref, 120))
	}
	if keyword != "not" && !constrains(m) {
		s.add(RuleUntypedSchema, where, "", "the schema has no validation keyword, so it accepts any value: declare its type (or an anyOf of the types it takes)")
	}
	eachSub(m, path, func(child any, childPath, kw string) {
		s.walk(schema, child, childPath, kw, depth+1)
	})
}

func constrains(m map[string]any) bool {
	for k := range m {
		if slices.Contains(constraining, k) {
			return true
		}
	}
	_, hasIf := m["if"]
	_, hasThen := m["then"]
	_, hasElse := m["else"]
	return hasIf && (hasThen || hasElse)
}

func declaresID(node any, depth int) bool {
	m, ok := node.(map[string]any)
	if !ok || depth > maxDepth {
		return false
	}
	if id, _ := m["$id"].(string); id != "" {
		return true
	}
	found := false
	eachSub(m, "", func(child any, _, _ string) {
		if !found {
			found = declaresID(child, depth+1)
		}
	})
	return found
}

// eachSub calls visit for every subschema of m, in a stable order.
func eachSub(m map[string]any, path string, visit func(child any, path, keyword string)) {
	for _, k := range subMapKeywords {
		sub, ok := m[k].(map[string]any)
		if !ok {
			continue
		}
		for _, name := range sortedKeys(sub) {
			visit(sub[name], join(join(path, k), name), k)
		}
	}
	for _, k := range subArrayKeywords {
		arr, ok := m[k].([]any)
		if !ok {
			continue
		}
		for i, sub := range arr {
			visit(sub, fmt.Sprintf("%s[%d]", join(path, k), i), k)
		}
	}
	for _, k := range subKeywords {
		v, ok := m[k]
		if !ok {
			continue
		}
		if arr, isArr := v.([]any); isArr && k == "items" {
			for i, sub := range arr {
				visit(sub, fmt.Sprintf("%s[%d]", join(path, k), i), k)
			}
			continue
		}
		visit(v, join(path, k), k)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ---- quality: parameters and enum options ----

// params checks that every property of an object schema (nested objects
// and array items included) is described and its enum options explained.
func (s *scanner) params(path string, node any, depth int) {
	m, ok := node.(map[string]any)
	if !ok || depth > 8 {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, name := range sortedKeys(props) {
			p, ok := props[name].(map[string]any)
			if !ok {
				continue // a boolean schema: the portability rule reports it
			}
			where := join(path, "properties."+name)
			desc := describe(p)
			if desc == "" {
				s.add(RuleParamUndescribed, where, "", "parameter %q has no description: say what it means and which values it takes", name)
			} else {
				s.text(where+".description", desc)
			}
			s.enums(where, name, p, desc)
			s.params(where, p, depth+1)
		}
	}
	if items, ok := m["items"].(map[string]any); ok {
		s.enums(join(path, "items"), "items", items, describe(items)+" "+describe(m))
		s.params(join(path, "items"), items, depth+1)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if arr, ok := m[k].([]any); ok {
			for i, sub := range arr {
				s.params(fmt.Sprintf("%s[%d]", join(path, k), i), sub, depth+1)
			}
		}
	}
}

// describe returns a schema's description, else its title.
func describe(m map[string]any) string {
	if d, _ := m["description"].(string); strings.TrimSpace(d) != "" {
		return d
	}
	t, _ := m["title"].(string)
	return strings.TrimSpace(t)
}

// enums checks that each option of an enum is explained: named in the
// description of the parameter (or of its items), or given as a oneOf/anyOf
// of const values that each have a description.
func (s *scanner) enums(path, name string, p map[string]any, desc string) {
	if items, ok := p["items"].(map[string]any); ok && p["enum"] == nil {
		if _, has := items["enum"]; has {
			return // checked as the items of the array
		}
	}
	if opts, ok := p["enum"].([]any); ok {
		var missing []string
		for _, o := range opts {
			v := optionText(o)
			if v == "" || !mentions(desc, v) {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 && len(opts) > 1 {
			s.add(RuleEnumUnexplained, path, "", "the description of %q does not explain the option(s) %s: say what each one means", name, quoteAll(missing))
		}
		return
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		arr, ok := p[k].([]any)
		if !ok {
			continue
		}
		var missing []string
		consts := 0
		for _, b := range arr {
			bm, ok := b.(map[string]any)
			if !ok {
				continue
			}
			c, has := bm["const"]
			if !has {
				continue
			}
			consts++
			if describe(bm) == "" && !mentions(desc, optionText(c)) {
				missing = append(missing, optionText(c))
			}
		}
		if consts > 1 && len(missing) > 0 {
			s.add(RuleEnumUnexplained, path, "", "option(s) %s of %q have no description", quoteAll(missing), name)
		}
	}
}

func optionText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// mentions reports whether text names option v as a word of its own.
func mentions(text, v string) bool {
	if v == "" {
		return false
	}
	lt, lv := strings.ToLower(text), strings.ToLower(v)
	for i := 0; ; {
		j := strings.Index(lt[i:], lv)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(lv)
		if (start == 0 || !wordByte(lt[start-1])) && (end == len(lt) || !wordByte(lt[end])) {
			return true
		}
		i = start + 1
	}
}

func wordByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ---- security: text aimed at the model ----

// instructionPatterns are phrasings that give a model orders. Tool
// descriptions describe; they do not tell the model what to do before or
// instead of what the user asked, nor what to keep from the user.
//
// Each pattern runs only when its text holds one of its trigger words: the
// patterns are costly, most texts have none of the words. They are
// compiled at the first scan, not when the program starts.
var instructionPatterns = sync.OnceValue(func() []instructionPattern {
	return []instructionPattern{
		{[]string{"ignore", "disregard", "forget", "override"}, regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override)\b[^.\n]{0,30}\b(previous|prior|above|earlier|other|all|system|user'?s?)\b[^.\n]{0,20}\b(instructions?|rules|directions|prompts?|guidelines)`),
			"tells the model to ignore its instructions"},
		{[]string{"not", "don't", "never", "without"}, regexp.MustCompile(`(?i)\b(do not|don't|never|without)\b[^.\n]{0,20}\b(tell|telling|inform|informing|mention|mentioning|reveal|revealing|show|showing|notify|notifying|ask|asking|alert|alerting)\b[^.\n]{0,15}\b(the )?(user|human|person|operator)`),
			"tells the model to keep something from the user"},
		{[]string{"before", "prior to", "instead of"}, regexp.MustCompile(`(?i)\b(before|prior to|instead of)\b[^.\n]{0,25}\b(answering|responding|replying|you (answer|respond|reply|continue|proceed)|using (this|any|another|other)|calling (this|any|another|other)|any other (tool|action|step)|doing anything)`),
			"tells the model what to do before or instead of its task"},
		{[]string{"must", "should", "need to", "have to", "required to", "instructed to"}, regexp.MustCompile(`(?i)\b(you|the (assistant|model|agent|ai|llm))\b[^.\n]{0,15}\b(must|should|need to|have to|are required to|are instructed to)\b[^.\n]{0,15}\b(always |first |also |immediately )?(call|invoke|run|execute|trigger|use the tool|send|forward|upload|read)\b`),
			"orders the model to call or send something"},
		{[]string{"always", "first", "immediately", "also", "then"}, regexp.MustCompile(`(?i)\b(always|first|immediately|also|then)\s+(call|invoke|run|execute|trigger)\s+(the\s+)?[A-Za-z0-9]+(_[A-Za-z0-9]+)+`),
			"orders the model to call another tool"},
		{[]string{"output", "result", "response", "data", "content"}, regexp.MustCompile(`(?i)\b(pass|send|forward|give|hand|copy|post|upload|include|append|attach|submit)\b[^.\n]{0,40}\b(outputs?|results?|responses?|data|contents?)\b[^.\n]{0,30}\b(to|into)\s+(the\s+)?(tool\s+|function\s+)?[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+`),
			"tells the model to hand data to a tool"},
		{[]string{"<"}, regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|admin|secret|hidden|override)\s*>`),
			"carries a pseudo-tag aimed at the model"},
		{[]string{"system prompt", "developer message", "jailbreak", "you are now", "act as"}, regexp.MustCompile(`(?i)\b(system prompt|developer message|jailbreak|you are now|act as (an? )?(admin|administrator|root|developer))\b`),
			"addresses the model's role or prompt"},
		{[]string{"ssh", "id_rsa", ".env", "passwd", "credentials", "private key", "api", "token", "password"}, regexp.MustCompile(`(?i)(~/\.ssh|id_rsa|\.env\b|/etc/passwd|\.aws/credentials|private key|api[_ -]?keys?|access tokens?|passwords?)[^.\n]{0,40}\b(send|include|pass|append|attach|upload|forward|read|copy)\b|\b(send|include|pass|append|attach|upload|forward|read|copy)\b[^.\n]{0,40}(~/\.ssh|id_rsa|\.env\b|/etc/passwd|\.aws/credentials|private key|api[_ -]?keys?|access tokens?|passwords?)`),
			"asks for secrets to be read or sent"},
	}
})

type instructionPattern struct {
	triggers []string
	re       *regexp.Regexp
	what     string
}

var (
	htmlComment = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<!--.*?-->`) })
	identRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(?:__?[A-Za-z0-9]+)+`) })
)

// text checks a piece of text from the tool's author that reaches a model.
func (s *scanner) text(path, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	if r, ok := hiddenRune(text); ok {
		s.add(RuleHiddenText, path, "", "the text holds an invisible or direction-changing character (%U) a person does not see but a model reads", r)
	}
	if m := htmlComment().FindString(text); m != "" {
		s.add(RuleHiddenText, path, Excerpt(m), "the text holds an HTML comment: hidden when rendered, read by the model")
	}
	lower := strings.ToLower(text)
	for _, p := range instructionPatterns() {
		if !slices.ContainsFunc(p.triggers, func(w string) bool { return strings.Contains(lower, w) }) {
			continue
		}
		if loc := p.re.FindStringIndex(text); loc != nil {
			s.add(RuleModelInstructions, path, Excerpt(sentence(text, loc)), "the text %s", p.what)
			break // one finding per text is enough to withhold it
		}
	}
	for _, id := range identRe().FindAllString(text, -1) {
		name, owners := s.toolRef(id)
		if owners == nil {
			continue
		}
		s.add(RuleCrossServerReference, path, Excerpt(id), "the text names %q, a tool of %s: a tool's text should describe that tool only",
			name, strings.Join(owners, ", "))
		break
	}
}

// toolRef returns the tool an identifier of the text names and the other
// sources that have it, or nil owners when it names no other source's
// tool. "server__tool" (how agents name the tools of several servers)
// names tool.
func (s *scanner) toolRef(id string) (string, []string) {
	names := []string{id}
	if i := strings.LastIndex(id, "__"); i > 0 && i+2 < len(id) {
		names = append(names, id[i+2:])
	}
	for _, name := range names {
		owners := s.owners[name]
		if len(owners) == 0 || slices.Contains(owners, s.source) || name == s.tool.Name {
			continue
		}
		return name, owners
	}
	return "", nil
}

// Screener checks text from another party that reaches a model beyond a
// tool's description — what a tool returned — with the security rules of
// a scan: hidden text, instructions aimed at the model and names of
// another source's tools. A tool result is data for the model; text in it
// that gives orders is screened like a poisoned description. A Screener is
// safe for concurrent use.
type Screener struct {
	owners map[string][]string
}

// NewScreener returns a screener that knows the tools of sources (for the
// rule on another source's tool names).
func NewScreener(sources []Source) *Screener {
	return &Screener{owners: ownersOf(sources)}
}

// Screen returns the security findings on text that tool of source
// returned; path says where in the result it was (e.g. "result.text").
// Nil means the text may reach a model.
func (sc *Screener) Screen(source, tool, path, text string) []Finding {
	s := &scanner{source: source, tool: &Tool{Name: tool}, owners: sc.owners}
	s.text(path, text)
	return s.findings
}

// hiddenRune returns the first character of text that a person does not see
// but a model reads: format characters (zero-width, bidirectional controls,
// tag characters) and controls other than tab and newline.
func hiddenRune(text string) (rune, bool) {
	for _, r := range text {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
		case unicode.Is(unicode.Cf, r), unicode.IsControl(r), r >= 0xE0000 && r <= 0xE007F:
			return r, true
		}
	}
	return 0, false
}

// sentence returns the sentence of text around loc.
func sentence(text string, loc []int) string {
	start := strings.LastIndexAny(text[:loc[0]], ".!?\n")
	end := strings.IndexAny(text[loc[1]:], ".!?\n")
	if end < 0 {
		end = len(text)
	} else {
		end += loc[1] + 1
	}
	return strings.TrimSpace(text[start+1 : end])
}

// Excerpt is text from another party as a finding shows it: one line,
// invisible characters written as escapes, at most 160 bytes.
func Excerpt(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case unicode.Is(unicode.Cf, r) || unicode.IsControl(r) || r >= 0xE0000 && r <= 0xE007F:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return clip(strings.TrimSpace(b.String()), 160)
}
