package duet

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"
)

// WebhookEvent names what a webhook is told about.
type WebhookEvent string

// Webhook events.
const (
	// EventRunFinished: a run of the task ended (its verdict, counts,
	// failed cases and a link to it), when the webhook's On matches.
	EventRunFinished WebhookEvent = "run.finished"
	// EventCaseBroken: a case of the task is broken by a change of an MCP
	// tool it calls (a contract alert); its next run would fail.
	EventCaseBroken WebhookEvent = "case.broken"
	// EventCaseChanged: an MCP tool a case calls changed compatibly.
	EventCaseChanged WebhookEvent = "case.changed"
)

// WebhookEvents are the events a webhook may subscribe to, in order.
var WebhookEvents = []WebhookEvent{EventRunFinished, EventCaseBroken, EventCaseChanged}

// WebhookFormat is the shape of a delivery's body.
type WebhookFormat string

// Webhook formats.
const (
	WebhookJSON  WebhookFormat = "json"  // Duet's JSON body (docs/webhooks.md)
	WebhookSlack WebhookFormat = "slack" // {"text": ...}: what a Slack-compatible incoming webhook takes
)

// Webhook is a URL a task's events are POSTed to, signed with the
// webhook's secret (HMAC-SHA256 over the timestamp and the body). Only the
// task's owner (or a member of the team that owns it) makes, sees and
// changes a task's webhooks. The secret is stored sealed (AES-256-GCM under
// the master key, bound to the webhook's id) and shown once, when it is
// made.
type Webhook struct {
	ID     string         `json:"id"`
	TaskID string         `json:"taskId"`
	Name   string         `json:"name"`
	URL    string         `json:"url"`
	Events []WebhookEvent `json:"events"`
	// On says after which runs run.finished is sent (success, failure,
	// always).
	On              PostRunWhen   `json:"on"`
	Format          WebhookFormat `json:"format"`
	Disabled        bool          `json:"disabled,omitempty"`
	SecretSealed    []byte        `json:"-"`
	CreatedBy       string        `json:"createdBy"`
	CreatedAt       time.Time     `json:"createdAt"`
	UpdatedAt       time.Time     `json:"updatedAt"`
	SecretRotatedAt time.Time     `json:"secretRotatedAt"`
}

// Wants reports whether w is sent event (for run.finished: after a run
// that ended with status, flaky of its cases having passed on a retry).
func (w *Webhook) Wants(event WebhookEvent, status RunStatus, flaky int) bool {
	if w.Disabled || !slices.Contains(w.Events, event) {
		return false
	}
	if event != EventRunFinished {
		return true
	}
	if w.On == PostRunOnFlaky {
		return status == StatusPassed && flaky > 0
	}
	return w.On.Matches(status)
}

// ValidWebhook checks a webhook's name, URL, events, On and format (the URL
// is checked again, by the network guard, at every delivery). Returns
// INVALID_ARGUMENT.
func ValidWebhook(w *Webhook) error {
	if n := strings.TrimSpace(w.Name); n == "" || len(n) > 100 || strings.ContainsAny(n, "\r\n\t") {
		return Errorf(CodeInvalidArgument, "a webhook needs a name: one line of at most 100 characters")
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || len(w.URL) > 2048 {
		return Errorf(CodeInvalidArgument, "webhook %q: the URL must be an absolute http or https URL without credentials, at most 2048 characters", w.Name)
	}
	if u.Fragment != "" {
		return Errorf(CodeInvalidArgument, "webhook %q: the URL must not have a fragment", w.Name)
	}
	if len(w.Events) == 0 {
		return Errorf(CodeInvalidArgument, "webhook %q: name at least one event (%s)", w.Name, joinEvents(WebhookEvents))
	}
	for i, e := range w.Events {
		if !slices.Contains(WebhookEvents, e) {
			return Errorf(CodeInvalidArgument, "webhook %q: unknown event %q (events: %s)", w.Name, e, joinEvents(WebhookEvents))
		}
		if slices.Contains(w.Events[:i], e) {
			return Errorf(CodeInvalidArgument, "webhook %q: event %s is named twice", w.Name, e)
		}
	}
	switch w.On {
	case PostRunOnSuccess, PostRunOnFailure, PostRunAlways, PostRunOnFlaky:
	default:
		return Errorf(CodeInvalidArgument, "webhook %q: on must be success, failure, flaky or always, got %q", w.Name, w.On)
	}
	switch w.Format {
	case WebhookJSON, WebhookSlack:
	default:
		return Errorf(CodeInvalidArgument, "webhook %q: format must be json or slack, got %q", w.Name, w.Format)
	}
	return nil
}

func joinEvents(es []WebhookEvent) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// DeliveryStatus is where a webhook delivery stands.
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryPending    DeliveryStatus = "pending"    // waiting for its next attempt (NextAttemptAt)
	DeliveryDelivering DeliveryStatus = "delivering" // an instance holds it under a lease and is sending it
	DeliveryDelivered  DeliveryStatus = "delivered"  // the receiver answered 2xx
	DeliveryFailed     DeliveryStatus = "failed"     // every attempt failed, or the destination is refused
)

// WebhookDelivery is one event to send to one webhook: the row is the job.
// It is made in the transaction that records what it tells (a run's end:
// RunStore.FinishRun; a contract alert), so no event is lost however a
// process ends; an instance claims a due one under a lease, sends it, and
// records the outcome (or the next attempt, with exponential backoff), so
// a restart loses no pending delivery and an instance that dies mid-send
// leaves it to another once the lease expires (at least once: receivers
// deduplicate by the Duet-Delivery header).
type WebhookDelivery struct {
	ID        string         `json:"id"`
	WebhookID string         `json:"webhookId"`
	TaskID    string         `json:"taskId"`
	Event     WebhookEvent   `json:"event"`
	RunID     string         `json:"runId,omitempty"`
	CaseID    string         `json:"caseId,omitempty"`
	Status    DeliveryStatus `json:"status"`
	Attempts  int            `json:"attempts"`
	// Payload is the event's JSON (built when it is first sent, for a
	// run's end; given when it is made, for an alert); the body sent is
	// it, or its Slack form.
	Payload       []byte     `json:"-"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	LastAttemptAt *time.Time `json:"lastAttemptAt,omitempty"`
	ResponseCode  int        `json:"responseCode,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	RedeliveryOf  string     `json:"redeliveryOf,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	// Lease is the claim's token while Status is delivering.
	Lease string `json:"-"`
}

// DeliveryOutcome is what one attempt of a delivery came to.
type DeliveryOutcome struct {
	Status       DeliveryStatus // delivered, failed, or pending (retried at NextAttemptAt)
	ResponseCode int
	Error        string
	NextAttempt  time.Time // when Status is pending
	Payload      []byte    // the payload sent (kept for the next attempts)
	At           time.Time
}

// WebhookStore keeps webhooks and their deliveries.
type WebhookStore interface {
	// CreateWebhook stores w (its ID set when empty: a caller that seals
	// the secret under the ID chooses it; times set) on a task by owns (its
	// owner, or a member of the team that owns it). Returns NOT_FOUND,
	// INVALID_ARGUMENT, CONFLICT (a webhook of that name on the task).
	CreateWebhook(ctx context.Context, by string, w *Webhook) error
	// FindWebhooks lists the webhooks of a task by owns, by name.
	// Returns NOT_FOUND.
	FindWebhooks(ctx context.Context, by, taskID string) ([]*Webhook, error)
	// FindWebhook returns a webhook of a task by owns ("" by: internal).
	// Returns NOT_FOUND.
	FindWebhook(ctx context.Context, by, id string) (*Webhook, error)
	// UpdateWebhook stores w's URL, events, On, format, disabled flag and,
	// when not nil, sealed secret. Returns NOT_FOUND, INVALID_ARGUMENT.
	UpdateWebhook(ctx context.Context, by string, w *Webhook) error
	// DeleteWebhook removes a webhook and its deliveries. Returns
	// NOT_FOUND.
	DeleteWebhook(ctx context.Context, by, id string) error
	// EnqueueDeliveries makes a pending delivery of event, with payload,
	// due now, for each enabled webhook of taskID subscribed to it, and
	// returns them. (A run's end makes its run.finished deliveries itself,
	// in the transaction that stores the verdict: RunStore.FinishRun.)
	EnqueueDeliveries(ctx context.Context, taskID string, event WebhookEvent, caseID string, payload []byte) ([]*WebhookDelivery, error)
	// ClaimDelivery takes the oldest due delivery (pending with
	// NextAttemptAt at or before now, or delivering with an expired lease)
	// and marks it delivering under a new lease until now+lease; nil when
	// none is due. It also returns the earliest NextAttemptAt of a pending
	// delivery (zero for none).
	ClaimDelivery(ctx context.Context, now time.Time, lease time.Duration) (*WebhookDelivery, time.Time, error)
	// FinishDelivery records an attempt of a delivery claimed under lease
	// (one more attempt). Returns LEASE_LOST when another instance claimed
	// it since.
	FinishDelivery(ctx context.Context, id, lease string, o DeliveryOutcome) error
	// FindDeliveries lists the deliveries of a webhook by owns, newest
	// first, at most limit. Returns NOT_FOUND.
	FindDeliveries(ctx context.Context, by, webhookID string, limit int) ([]*WebhookDelivery, error)
	// Redeliver makes a new pending delivery of a finished (delivered or
	// failed) delivery of a webhook by owns, with its payload, due now.
	// Returns NOT_FOUND, INVALID_ARGUMENT (still pending or delivering).
	Redeliver(ctx context.Context, by, deliveryID string) (*WebhookDelivery, error)
}
