package api

import (
	"context"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/webhook"
)

// WebhookIn is a webhook to make on a task.
type WebhookIn struct {
	TaskID string   `json:"taskId" jsonschema:"the task whose events are sent (you must own it)"`
	Name   string   `json:"name" jsonschema:"a name, unique among the task's webhooks"`
	URL    string   `json:"url" jsonschema:"the receiver: an http or https URL (checked by the network guard at every delivery)"`
	Events []string `json:"events,omitempty" jsonschema:"run.finished, case.broken, case.changed (default: run.finished and case.broken)"`
	On     string   `json:"on,omitempty" jsonschema:"after which runs run.finished is sent: failure (default), success, flaky (passed, some cases only on a retry) or always"`
	Format string   `json:"format,omitempty" jsonschema:"json (default: Duet's body) or slack (a Slack-compatible text message)"`
}

// WebhookChange changes a webhook: each field given replaces its value.
type WebhookChange struct {
	URL      *string  `json:"url,omitempty"`
	Events   []string `json:"events,omitempty"`
	On       *string  `json:"on,omitempty"`
	Format   *string  `json:"format,omitempty"`
	Disabled *bool    `json:"disabled,omitempty" jsonschema:"true: send nothing until enabled again"`
}

// WebhookView is a webhook as the API shows it: never its secret, except
// once, when it is made or rotated.
type WebhookView struct {
	ID              string    `json:"id"`
	TaskID          string    `json:"taskId"`
	Name            string    `json:"name"`
	URL             string    `json:"url"`
	Events          []string  `json:"events"`
	On              string    `json:"on"`
	Format          string    `json:"format"`
	Disabled        bool      `json:"disabled"`
	CreatedBy       string    `json:"createdBy"`
	CreatedAt       time.Time `json:"createdAt"`
	SecretRotatedAt time.Time `json:"secretRotatedAt"`
	// Secret is the signing secret, in the answer that made or rotated it
	// only: it is stored sealed and cannot be read again.
	Secret string `json:"secret,omitempty" jsonschema:"the signing secret: shown this once (store it in the receiver)"`
}

// WebhookList is a task's webhooks.
type WebhookList struct {
	Webhooks []WebhookView `json:"webhooks"`
}

// DeliveryList is a webhook's deliveries, newest first.
type DeliveryList struct {
	Deliveries []*duet.WebhookDelivery `json:"deliveries"`
}

func newWebhookView(w *duet.Webhook) WebhookView {
	v := WebhookView{ID: w.ID, TaskID: w.TaskID, Name: w.Name, URL: w.URL, On: string(w.On), Format: string(w.Format), Disabled: w.Disabled,
		CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt, SecretRotatedAt: w.SecretRotatedAt, Events: []string{}}
	for _, e := range w.Events {
		v.Events = append(v.Events, string(e))
	}
	return v
}

func webhookEvents(in []string) []duet.WebhookEvent {
	if len(in) == 0 {
		return []duet.WebhookEvent{duet.EventRunFinished, duet.EventCaseBroken}
	}
	out := make([]duet.WebhookEvent, 0, len(in))
	for _, e := range in {
		out = append(out, duet.WebhookEvent(strings.TrimSpace(e)))
	}
	return out
}

// checkWebhookURL refuses a URL the network guard would refuse at every
// delivery (a private or loopback address the deployment does not allow).
// Returns URL_REFUSED.
func (s *Service) checkWebhookURL(ctx context.Context, u string) error {
	if s.d.CheckURL == nil {
		return nil
	}
	return s.d.CheckURL(ctx, u)
}

// sealWebhook seals a new secret for w and returns it.
func (s *Service) sealWebhook(w *duet.Webhook) (string, error) {
	if s.d.Keyring == nil {
		return "", duet.Errorf(duet.CodeUnavailable, "no master key is configured, so webhook secrets cannot be stored")
	}
	kr, err := s.d.Keyring()
	if err != nil {
		return "", duet.WrapError(duet.CodeUnavailable, err, "cannot load the master key: %s", duet.ErrorMessage(err))
	}
	secret := webhook.NewSecret()
	if w.SecretSealed, err = webhook.Seal(kr, w.ID, secret); err != nil {
		return "", err
	}
	return secret, nil
}

// CreateWebhook makes a webhook on a task the caller owns and returns it
// with its signing secret, shown this once. Returns NOT_FOUND (not the
// task's owner), INVALID_ARGUMENT, CONFLICT, URL_REFUSED, UNAVAILABLE.
func (s *Service) CreateWebhook(ctx context.Context, c duet.Caller, in WebhookIn) (WebhookView, error) {
	// The URL may hold a token: the audit measures it, never keeps it.
	return govern(ctx, s, c, "createWebhook", in, func(ctx context.Context) (WebhookView, error) {
		if err := mayWrite(c, "a task's webhooks"); err != nil {
			return WebhookView{}, err
		}
		w := &duet.Webhook{ID: duet.NewID("whk"), TaskID: in.TaskID, Name: strings.TrimSpace(in.Name), URL: strings.TrimSpace(in.URL), Events: webhookEvents(in.Events),
			On: duet.PostRunWhen(orDefault(in.On, string(duet.PostRunOnFailure))), Format: duet.WebhookFormat(orDefault(in.Format, string(duet.WebhookJSON)))}
		if err := duet.ValidWebhook(w); err != nil {
			return WebhookView{}, err
		}
		if err := s.checkWebhookURL(ctx, w.URL); err != nil {
			return WebhookView{}, err
		}
		// The secret is sealed bound to the webhook's id, chosen here.
		return s.saveSealed(ctx, c.UserID, w, s.d.Store.CreateWebhook)
	})
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v == "" {
		return def
	}
	return v
}

// ListWebhooks lists the webhooks of a task the caller owns. Returns
// NOT_FOUND.
func (s *Service) ListWebhooks(ctx context.Context, c duet.Caller, taskID string) (WebhookList, error) {
	return govern(ctx, s, c, "listWebhooks", nil, func(ctx context.Context) (WebhookList, error) {
		list, err := s.d.Store.FindWebhooks(ctx, c.UserID, taskID)
		if err != nil {
			return WebhookList{}, err
		}
		return WebhookList{Webhooks: catalog.Views(list, newWebhookView)}, nil
	})
}

// GetWebhook returns one webhook of a task the caller owns. Returns
// NOT_FOUND.
func (s *Service) GetWebhook(ctx context.Context, c duet.Caller, id string) (WebhookView, error) {
	return govern(ctx, s, c, "getWebhook", nil, func(ctx context.Context) (WebhookView, error) {
		w, err := s.d.Store.FindWebhook(ctx, c.UserID, id)
		if err != nil {
			return WebhookView{}, err
		}
		return newWebhookView(w), nil
	})
}

// UpdateWebhook changes a webhook of a task the caller owns. Returns
// NOT_FOUND, INVALID_ARGUMENT, URL_REFUSED.
func (s *Service) UpdateWebhook(ctx context.Context, c duet.Caller, id string, in WebhookChange) (WebhookView, error) {
	return govern(ctx, s, c, "updateWebhook", in, func(ctx context.Context) (WebhookView, error) {
		w, err := s.webhookToChange(ctx, c, id)
		if err != nil {
			return WebhookView{}, err
		}
		w.SecretSealed = nil // kept
		if in.URL != nil {
			w.URL = strings.TrimSpace(*in.URL)
			if err := s.checkWebhookURL(ctx, w.URL); err != nil {
				return WebhookView{}, err
			}
		}
		if in.Events != nil {
			w.Events = webhookEvents(in.Events)
		}
		if in.On != nil {
			w.On = duet.PostRunWhen(strings.TrimSpace(*in.On))
		}
		if in.Format != nil {
			w.Format = duet.WebhookFormat(strings.TrimSpace(*in.Format))
		}
		if in.Disabled != nil {
			w.Disabled = *in.Disabled
		}
		if err := s.d.Store.UpdateWebhook(ctx, c.UserID, w); err != nil {
			return WebhookView{}, err
		}
		return newWebhookView(w), nil
	})
}

// RotateWebhookSecret gives a webhook a new signing secret, shown this
// once; deliveries sent from now on are signed with it. Returns NOT_FOUND,
// UNAVAILABLE.
func (s *Service) RotateWebhookSecret(ctx context.Context, c duet.Caller, id string) (WebhookView, error) {
	return govern(ctx, s, c, "rotateWebhookSecret", nil, func(ctx context.Context) (WebhookView, error) {
		w, err := s.webhookToChange(ctx, c, id)
		if err != nil {
			return WebhookView{}, err
		}
		return s.saveSealed(ctx, c.UserID, w, s.d.Store.UpdateWebhook)
	})
}

// webhookToChange is the webhook id of a task the caller owns, for a
// change: the caller must be allowed to write (mayWrite). Returns
// INSUFFICIENT_SCOPE, NOT_FOUND.
func (s *Service) webhookToChange(ctx context.Context, c duet.Caller, id string) (*duet.Webhook, error) {
	if err := mayWrite(c, "a task's webhooks"); err != nil {
		return nil, err
	}
	return s.d.Store.FindWebhook(ctx, c.UserID, id)
}

// saveSealed gives w a new signing secret, stores w with save (as user) and
// returns its view with the secret, shown this once.
func (s *Service) saveSealed(ctx context.Context, user string, w *duet.Webhook, save func(context.Context, string, *duet.Webhook) error) (WebhookView, error) {
	secret, err := s.sealWebhook(w)
	if err != nil {
		return WebhookView{}, err
	}
	if err := save(ctx, user, w); err != nil {
		return WebhookView{}, err
	}
	v := newWebhookView(w)
	v.Secret = secret
	return v, nil
}

// DeleteWebhook removes a webhook and its deliveries. Returns NOT_FOUND.
func (s *Service) DeleteWebhook(ctx context.Context, c duet.Caller, id string) (Empty, error) {
	return govern(ctx, s, c, "deleteWebhook", nil, func(ctx context.Context) (Empty, error) {
		if err := mayWrite(c, "a task's webhooks"); err != nil {
			return Empty{}, err
		}
		return Empty{}, s.d.Store.DeleteWebhook(ctx, c.UserID, id)
	})
}

// ListDeliveries lists a webhook's deliveries, newest first: status,
// attempts, the receiver's last response code and the next retry. Returns
// NOT_FOUND.
func (s *Service) ListDeliveries(ctx context.Context, c duet.Caller, webhookID string, limit int) (DeliveryList, error) {
	return govern(ctx, s, c, "listWebhookDeliveries", nil, func(ctx context.Context) (DeliveryList, error) {
		list, err := s.d.Store.FindDeliveries(ctx, c.UserID, webhookID, limit)
		if err != nil {
			return DeliveryList{}, err
		}
		return DeliveryList{Deliveries: list}, nil
	})
}

// Redeliver sends a delivered or failed delivery again, as a new delivery
// with the same body. Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) Redeliver(ctx context.Context, c duet.Caller, deliveryID string) (*duet.WebhookDelivery, error) {
	return govern(ctx, s, c, "redeliverWebhook", nil, func(ctx context.Context) (*duet.WebhookDelivery, error) {
		if err := mayWrite(c, "a task's webhooks"); err != nil {
			return nil, err
		}
		x, err := s.d.Store.Redeliver(ctx, c.UserID, deliveryID)
		if err != nil {
			return nil, err
		}
		if s.d.DeliveryMade != nil {
			s.d.DeliveryMade()
		}
		return x, nil
	})
}

// mayWrite refuses a caller whose OAuth token may only read the change of
// what (webhooks change what a task sends out; secrets what its runs
// send). Returns INSUFFICIENT_SCOPE.
func mayWrite(c duet.Caller, what string) error {
	if !c.Access.Allows(true) {
		return duet.Errorf(duet.CodeInsufficientScope, "changing %s needs the run scope of the access token", what)
	}
	return nil
}

// AllContractAlerts lists the contract alerts of every task the caller can
// see, broken first.
func (s *Service) AllContractAlerts(ctx context.Context, c duet.Caller) (AlertList, error) {
	return govern(ctx, s, c, "listAllContractAlerts", nil, func(ctx context.Context) (AlertList, error) {
		return s.alertList(ctx, c, "")
	})
}

// BrokenCases counts the cases of the tasks the caller can see that a
// change of an MCP tool broke (the console's badge); 0 when it cannot
// tell. A read of the caller's own view: not audited.
func (s *Service) BrokenCases(ctx context.Context, c duet.Caller) int {
	if c.UserID == "" {
		return 0
	}
	alerts, err := s.d.Store.FindContractAlerts(ctx, c.UserID, "")
	if err != nil {
		return 0
	}
	cases := map[string]bool{}
	for _, a := range alerts {
		if a.Broken {
			cases[a.CaseID] = true
		}
	}
	return len(cases)
}
