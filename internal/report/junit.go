package report

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// The JUnit XML schema that CI systems (Jenkins, GitLab, GitHub Actions
// reporters) read: testsuites > testsuite > testcase, with failure, error or
// skipped children. A run is one testsuite; each case is a testcase.

// JUnitSuites is the root element of a JUnit report.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is the run.
type JUnitSuite struct {
	Name       string          `xml:"name,attr"`
	ID         string          `xml:"id,attr,omitempty"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []JUnitProperty `xml:"properties>property"`
	Cases      []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is a name and a value of the run.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one case execution.
type JUnitCase struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Time      string `xml:"time,attr"`
	// Properties are the case's tags, one duet.tag property each (as
	// pytest's record_property writes them; Jenkins shows them).
	Properties []JUnitProperty `xml:"properties>property"`
	Failure    *JUnitProblem   `xml:"failure"`
	Error      *JUnitProblem   `xml:"error"`
	Skipped    *JUnitProblem   `xml:"skipped"`
	// FlakyFailures and FlakyErrors are the failed attempts of a case that
	// passed on a retry (flaky): Maven Surefire's elements, which Jenkins
	// and other CI parsers read as a pass with flaky runs; parsers that do
	// not know them see a pass.
	FlakyFailures []*JUnitProblem `xml:"flakyFailure"`
	FlakyErrors   []*JUnitProblem `xml:"flakyError"`
	SystemOut     string          `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure, an error or a reason to skip.
type JUnitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnitXML returns the report as JUnit XML elements.
func (r *Report) JUnitXML() JUnitSuites {
	suite := JUnitSuite{
		Name: r.Task.Name, ID: r.Run.ID, Tests: len(r.Cases), Time: seconds(r.DurationMs),
		Properties: []JUnitProperty{
			{"duet.run.id", r.Run.ID},
			{"duet.run.status", string(r.Run.Status)},
			{"duet.task.id", r.Task.ID},
			{"duet.triggered_by", r.Run.TriggeredBy},
		},
	}
	if r.Run.StartedAt != nil {
		suite.Timestamp = r.Run.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	if r.Task.BaseURL != "" {
		suite.Properties = append(suite.Properties, JUnitProperty{"duet.task.base_url", r.Task.BaseURL})
	}
	if d := cmp.Or(r.Run.Device, r.Task.Device); d != "" {
		suite.Properties = append(suite.Properties, JUnitProperty{"duet.device", d})
	}
	suite.Properties = append(suite.Properties, JUnitProperty{"duet.disclosure", string(r.Disclosure)})
	if w := r.Window; w != nil {
		suite.Properties = append(suite.Properties,
			JUnitProperty{"duet.cases.shown", fmt.Sprintf("%d-%d of %d", w.First, w.Last, w.Total)},
			JUnitProperty{"duet.cases.not_shown", fmt.Sprint(w.NotShown)})
		if h := w.Hint(r.Run.ID); h != "" {
			suite.Properties = append(suite.Properties, JUnitProperty{"duet.cases.next_cursor", w.NextCursor}, JUnitProperty{"duet.cases.more", h})
		}
	}
	flaky := 0
	for _, c := range r.Cases {
		jc := JUnitCase{Name: c.Title, Classname: r.Task.Name + "." + c.Key, Time: seconds(c.DurationMs), SystemOut: timeline(c)}
		for _, tag := range c.Tags {
			jc.Properties = append(jc.Properties, JUnitProperty{"duet.tag", tag})
		}
		problem := &JUnitProblem{Message: problemMessage(c), Type: string(c.ErrorCode), Text: failureDetail(c)}
		switch c.Status {
		case duet.StatusPassed:
		case duet.StatusFlaky:
			flaky++
			for _, a := range c.Attempts {
				p := &JUnitProblem{Message: fmt.Sprintf("attempt %d: %s", a.Attempt, problemMessage(&Case{ErrorCode: a.ErrorCode, ErrorMessage: a.ErrorMessage})),
					Type: string(a.ErrorCode), Text: failureDetail(&Case{ErrorCode: a.ErrorCode, ErrorMessage: a.ErrorMessage, Steps: a.Steps})}
				if a.Status == duet.StatusError {
					jc.FlakyErrors = append(jc.FlakyErrors, p)
				} else {
					jc.FlakyFailures = append(jc.FlakyFailures, p)
				}
			}
		case duet.StatusFailed:
			jc.Failure = problem
			suite.Failures++
		case duet.StatusError:
			jc.Error = problem
			suite.Errors++
		case duet.StatusCancelled:
			jc.Skipped = &JUnitProblem{Message: cmp.Or(c.ErrorMessage, "cancelled")}
			suite.Skipped++
		default:
			jc.Skipped = &JUnitProblem{Message: "not run (" + string(c.Status) + ")"}
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, jc)
	}
	if flaky > 0 {
		suite.Properties = append(suite.Properties, JUnitProperty{"duet.cases.flaky", fmt.Sprint(flaky)})
	}
	return JUnitSuites{
		Name: "duet run " + r.Run.ID, Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Skipped: suite.Skipped, Time: suite.Time, Suites: []JUnitSuite{suite},
	}
}

// WriteJUnit writes the report as JUnit XML (its attachments not named:
// WriteJUnitFiles and WriteJUnitZip name and write them).
func (r *Report) WriteJUnit(w io.Writer) error {
	return encodeJUnit(w, r.JUnitXML())
}

func encodeJUnit(w io.Writer, x JUnitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(x); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func problemMessage(c *Case) string {
	if c.ErrorCode == "" {
		return c.ErrorMessage
	}
	return string(c.ErrorCode) + ": " + c.ErrorMessage
}

// failureDetail describes the failed step and where its screenshot is.
func failureDetail(c *Case) string {
	var b strings.Builder
	b.WriteString(problemMessage(c))
	for _, s := range c.Steps {
		if s.ErrorCode == "" || s.Optional {
			continue
		}
		fmt.Fprintf(&b, "\nstep %d (%s", s.Index+1, s.Name)
		if s.Line > 0 {
			fmt.Fprintf(&b, ", line %d", s.Line)
		}
		fmt.Fprintf(&b, "): %s: %s", s.ErrorCode, s.ErrorMessage)
		for _, shot := range s.Screenshots {
			fmt.Fprintf(&b, "\nscreenshot: %s", shot.ID)
		}
	}
	return b.String()
}

// timeline is the plain-text step list of a case.
func timeline(c *Case) string {
	var b strings.Builder
	for _, s := range c.Steps {
		fmt.Fprintf(&b, "%-9s %2d. %s", s.Status, s.Index+1, s.Name)
		if s.Status != duet.StatusPending && s.Status != duet.StatusSkipped {
			fmt.Fprintf(&b, " (%s)", formatDuration(s.DurationMs))
		}
		if s.ErrorCode != "" {
			fmt.Fprintf(&b, "\n             %s: %s", s.ErrorCode, s.ErrorMessage)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func seconds(ms int64) string {
	return fmt.Sprintf("%.3f", (time.Duration(ms) * time.Millisecond).Seconds())
}
