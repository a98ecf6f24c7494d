package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// Payload is the JSON body of a delivery (docs/webhooks.md).
type Payload struct {
	Event      duet.WebhookEvent `json:"event"`
	OccurredAt time.Time         `json:"occurredAt"`
	Task       TaskRef           `json:"task"`
	// Run is the run that ended (run.finished).
	Run *RunSummary `json:"run,omitempty"`
	// FailedCases are the run's cases that failed or ended in error, with
	// their errors as the run stored them (redacted by value).
	FailedCases []CaseSummary `json:"failedCases,omitempty"`
	// Alert is the contract alert (case.broken, case.changed): the case,
	// the tool that changed and why its call no longer fits.
	Alert *AlertSummary `json:"alert,omitempty"`
}

// TaskRef names a task.
type TaskRef struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Owner string `json:"owner"`
	URL   string `json:"url"`
}

// RunSummary is a run's verdict and counts.
type RunSummary struct {
	ID           string          `json:"id"`
	Status       duet.RunStatus  `json:"status"`
	ErrorCode    duet.Code       `json:"errorCode,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Totals       duet.RunTotals  `json:"totals"`
	TriggeredBy  string          `json:"triggeredBy"`
	CallSource   duet.CallSource `json:"callSource"`
	Environment  string          `json:"environment,omitempty"`
	Origin       *duet.RunOrigin `json:"origin,omitempty"`
	StartedAt    *time.Time      `json:"startedAt,omitempty"`
	FinishedAt   *time.Time      `json:"finishedAt,omitempty"`
	URL          string          `json:"url"`
}

// CaseSummary is a case of a run that did not pass.
type CaseSummary struct {
	CaseID       string         `json:"caseId"`
	Key          string         `json:"key"`
	Title        string         `json:"title"`
	Status       duet.RunStatus `json:"status"`
	ErrorCode    duet.Code      `json:"errorCode,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty"`
}

// AlertSummary is a contract alert with a link to its case.
type AlertSummary struct {
	*duet.ContractAlert
	URL string `json:"url"`
}

// link is the console's address of path: absolute with a public URL.
func link(public, path string) string {
	if public == "" {
		return path
	}
	return strings.TrimRight(public, "/") + path
}

func taskRef(public string, t *duet.Task) TaskRef {
	return TaskRef{ID: t.ID, Name: t.Name, Owner: t.Owner, URL: link(public, "/tasks/"+url.PathEscape(t.ID))}
}

// runPayload builds the body of a run.finished delivery from the stored
// run (final: it no longer changes).
func (d *Deliverer) runPayload(ctx context.Context, x *duet.WebhookDelivery) ([]byte, error) {
	run, err := d.o.Store.FindRunByID(ctx, "", x.RunID)
	if err != nil {
		return nil, err
	}
	task, err := d.o.Store.FindTaskByID(ctx, "", run.TaskID)
	if err != nil {
		return nil, err
	}
	execs, err := d.o.Store.FindExecutions(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	p := Payload{Event: duet.EventRunFinished, OccurredAt: x.CreatedAt, Task: taskRef(d.o.PublicURL, task),
		Run: &RunSummary{ID: run.ID, Status: run.Status, ErrorCode: run.ErrorCode, ErrorMessage: run.ErrorMessage, Totals: run.Totals,
			TriggeredBy: run.TriggeredBy, CallSource: run.CallSource, Environment: run.Environment, Origin: run.Origin,
			StartedAt: run.StartedAt, FinishedAt: run.FinishedAt, URL: link(d.o.PublicURL, "/runs/"+url.PathEscape(run.ID))},
		FailedCases: []CaseSummary{}}
	if run.Origin.Empty() {
		p.Run.Origin = nil
	}
	for _, e := range execs {
		if e.Status == duet.StatusFailed || e.Status == duet.StatusError {
			p.FailedCases = append(p.FailedCases, CaseSummary{CaseID: e.CaseID, Key: e.CaseKey, Title: e.CaseTitle, Status: e.Status,
				ErrorCode: e.ErrorCode, ErrorMessage: e.ErrorMessage})
		}
	}
	return encode(p), nil
}

// AlertPayload is the body of a case.broken or case.changed delivery.
func AlertPayload(public string, task *duet.Task, a *duet.ContractAlert) []byte {
	ev := duet.EventCaseChanged
	if a.Broken {
		ev = duet.EventCaseBroken
	}
	return encode(Payload{Event: ev, OccurredAt: a.DetectedAt, Task: taskRef(public, task),
		Alert: &AlertSummary{ContractAlert: a, URL: link(public, "/cases/"+url.PathEscape(a.CaseID))}})
}

// slackBody is payload as a Slack-compatible incoming-webhook message.
func slackBody(payload []byte) []byte {
	var p Payload
	if err := json.Unmarshal(payload, &p); err != nil {
		return encode(map[string]string{"text": "Duet: an event (unreadable)"})
	}
	var b strings.Builder
	switch {
	case p.Run != nil:
		t := p.Run.Totals
		fmt.Fprintf(&b, "Duet: run of *%s* %s — %d passed, %d failed, %d error, %d cases. <%s|Open the run>", p.Task.Name, p.Run.Status,
			t.Passed, t.Failed, t.Error, t.Cases, p.Run.URL)
		for i, c := range p.FailedCases {
			if i == 10 {
				fmt.Fprintf(&b, "\n… and %d more", len(p.FailedCases)-10)
				break
			}
			fmt.Fprintf(&b, "\n• %s (%s): %s", c.Title, c.Status, c.ErrorMessage)
		}
	case p.Alert != nil:
		what := "changed"
		if p.Alert.Broken {
			what = "is broken by a dependency change"
		}
		fmt.Fprintf(&b, "Duet: case *%s* of *%s* %s (tool %s). <%s|Open the case>", p.Alert.CaseTitle, p.Task.Name, what, p.Alert.Tool, p.Alert.URL)
		for _, pr := range p.Alert.Problems {
			fmt.Fprintf(&b, "\n• %s", pr)
		}
	default:
		fmt.Fprintf(&b, "Duet: %s", p.Event)
	}
	return encode(map[string]string{"text": b.String()})
}
