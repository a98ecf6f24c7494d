package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/scan"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplate is parsed at the first report, not when the program starts.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"dur":     formatDuration,
		"when":    formatTime,
		"pct":     percent,
		"pretty":  prettyJSON,
		"value":   prettyValue,
		"img":     func(s *Screenshot) template.URL { return template.URL(s.DataURI()) },
		"kb":      func(n int) string { return fmt.Sprintf("%.0f KB", float64(n)/1024) },
		"label":   statusLabel,
		"codeDoc": codeDoc,
		"add":     func(a, b int) int { return a + b },
		"join":    func(s []string) string { return strings.Join(s, ", ") },
		"short":   func(s string) string { return s[:min(len(s), 12)] },

		"trimKind":    trimKind,
		"outputLabel": outputLabel,
	}).Parse(htmlSource))
})

// htmlView is what the template renders.
type htmlView struct {
	*Report
	Totals   Totals
	Status   duet.RunStatus
	Problems []*Case     // failed, error and cancelled cases, in order
	Codes    []duet.Code // the codes that appear, for the glossary
	Device   string
	Scan     []scanView // one per MCP server the cases call
}

// scanView is what the report shows about one MCP server the cases call.
type scanView struct {
	*scan.Coverage
	Findings *scan.SourceReport // of the tools the cases call; nil when not registered
}

// WriteHTML writes the report as one self-contained HTML page: styles
// inline, screenshots as data: URIs, no script and nothing fetched.
func (r *Report) WriteHTML(w io.Writer) error {
	v := htmlView{Report: r, Totals: r.Totals(), Status: r.Run.Status, Device: r.Run.Device}
	if v.Device == "" {
		v.Device = r.Task.Device
	}
	if v.Device == "" {
		v.Device = "desktop"
	}
	seen := map[duet.Code]bool{}
	note := func(c duet.Code) {
		if c != "" && !seen[c] {
			seen[c] = true
			v.Codes = append(v.Codes, c)
		}
	}
	note(r.Run.ErrorCode)
	for _, c := range r.Cases {
		switch c.Status {
		case duet.StatusFailed, duet.StatusError, duet.StatusCancelled:
			v.Problems = append(v.Problems, c)
		}
		note(c.ErrorCode)
		for _, s := range c.Steps {
			note(s.ErrorCode)
		}
	}
	slices.Sort(v.Codes)
	if r.Scan != nil {
		for _, c := range r.Scan.Coverage {
			v.Scan = append(v.Scan, scanView{Coverage: c, Findings: r.Scan.Source(c.ServerKey)})
		}
	}
	var buf bytes.Buffer
	if err := htmlTemplate().Execute(&buf, v); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	_, err := buf.WriteTo(w)
	return err
}

// formatTime renders a time.Time or a *time.Time ("—" for nil).
func formatTime(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return "—"
		}
		t = *x
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// percent is part of whole (ints or int64s) in percent, for the bars.
func percent(part, whole any) string {
	p, w := toFloat(part), toFloat(whole)
	if w <= 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f", min(100, max(0, p*100/w)))
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return 0
}

func prettyJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return prettyValue(v)
}

func prettyValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// trimKind drops the kind that a default step name starts with ("open
// /login" → "/login"): the report shows the kind beside it.
func trimKind(name string, kind duet.StepKind) string {
	if rest, ok := strings.CutPrefix(name, string(kind)+" "); ok {
		return rest
	}
	if name == string(kind) {
		return ""
	}
	return name
}

// outputLabel names what a step's output is.
func outputLabel(kind duet.StepKind) string {
	switch kind {
	case duet.StepAssertText, duet.StepAssertURL:
		return "seen on the page"
	case duet.StepMCPCall:
		return "tool result"
	case duet.StepHTTP:
		return "response"
	}
	return "output"
}

func statusLabel(s duet.RunStatus) string {
	switch s {
	case duet.StatusPending:
		return "not run"
	case duet.StatusError:
		return "error"
	}
	return string(s)
}

// codeDocs say what each code of a step or case means, in the words of the
// person reading the report.
var codeDocs = map[duet.Code]string{
	duet.CodeAssertionFailed:        "An assertion did not hold: the page or a saved value is not what the case expects.",
	duet.CodeStepTimeout:            "A step did not finish within its time limit (its timeout, else DUET_STEP_TIMEOUT).",
	duet.CodeCaseTimeout:            "The case ran out of time (its timeout, else DUET_CASE_TIMEOUT).",
	duet.CodeElementNotFound:        "No element matched the selector, or it stayed hidden, in time.",
	duet.CodeLocatorAmbiguous:       "The locator matched several elements where the step needs one: the message lists them; name the one you mean (a role and name, within:, nth:).",
	duet.CodeBrowserUnavailable:     "No browser could be started: install Chromium (apt-get install -y chromium) or set DUET_CHROME_PATH.",
	duet.CodeBrowserError:           "The browser failed: the page did not load, or the browser crashed.",
	duet.CodeBindingFailed:          "A value a step needs could not be computed: a template, a variable or a page binding.",
	duet.CodeHTTPRequestFailed:      "An HTTP request could not be sent or its answer read.",
	duet.CodeCancelled:              "The run was cancelled before this finished.",
	duet.CodeInterrupted:            "The run was interrupted too often (worker crash or shutdown) to be resumed.",
	duet.CodeApprovalRequired:       "The step would call an MCP tool with the credentials of the person running the case, in a case someone else wrote: that person must approve this version of the case, and the places it can send data to, first (duet case approve).",
	duet.CodeInvalidArgument:        "A step's parameters are invalid.",
	duet.CodeURLRefused:             "The URL is not allowed (its scheme or its address).",
	duet.CodeMCPServerNotConfigured: "The person running the case has not registered this MCP server (or its credentials).",
	duet.CodeMCPToolNotFound:        "The MCP server has no such tool.",
	duet.CodeMCPCallTimeout:         "The MCP tool call did not answer in time.",
	duet.CodeMCPAuthFailed:          "The MCP server refused the credentials of the person running the case.",
	duet.CodeMCPToolError:           "The MCP tool answered with an error (isError).",
	duet.CodeMCPUnreachable:         "The MCP server could not be reached.",
	duet.CodeMCPProtocolMismatch:    "The MCP server speaks a protocol version Duet does not.",
	duet.CodeTimeout:                "Something took too long.",
	duet.CodeUnavailable:            "A service Duet depends on is unavailable.",
	duet.CodeInternal:               "An internal error of Duet; its log has the details under the run's trace id.",
}

func codeDoc(c duet.Code) string {
	if d, ok := codeDocs[c]; ok {
		return d
	}
	return "See the message for details."
}
