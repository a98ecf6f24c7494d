package webui

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/auth"
)

// webhookRow is a webhook with its latest deliveries.
type webhookRow struct {
	Hook       api.WebhookView
	Deliveries []*duet.WebhookDelivery
}

type webhooksData struct {
	TaskID   string
	TaskName string
	Hooks    []webhookRow
	// Secret is a secret just made or rotated: shown this once.
	Secret *api.WebhookView
	Events []duet.WebhookEvent
}

// newWebhookCookie carries a new webhook secret from the POST that made
// it to the page that shows it, once, sealed like a new token
// (newTokenKey), on the task's webhooks page only.
const newWebhookCookie = "duet_new_webhook_secret"

// deliveriesShown is how many deliveries of each webhook the page lists.
const deliveriesShown = 20

func webhooksPath(taskID string) string { return "/tasks/" + escapePath(taskID) + "/webhooks" }

func (c *Console) webhooks(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx, id := r.Context(), r.PathValue("id")
	t, err := c.svc.GetTask(ctx, v.caller, id)
	if err != nil {
		return err
	}
	list, err := c.svc.ListWebhooks(ctx, v.caller, id)
	if err != nil {
		return err
	}
	d := webhooksData{TaskID: id, TaskName: t.Task.Name, Events: duet.WebhookEvents}
	for _, h := range list.Webhooks {
		ds, err := c.svc.ListDeliveries(ctx, v.caller, h.ID, deliveriesShown)
		if err != nil {
			return err
		}
		d.Hooks = append(d.Hooks, webhookRow{Hook: h, Deliveries: ds.Deliveries})
	}
	if ck, err := r.Cookie(newWebhookCookie); err == nil {
		http.SetCookie(w, &http.Cookie{Name: newWebhookCookie, Path: webhooksPath(id), MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: auth.OverTLS(r)})
		var made api.WebhookView
		if sealed, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil {
			if plain, err := newTokenKey(v.CSRF).Open(nil, nil, sealed, []byte(v.User+"\x00webhook")); err == nil && json.Unmarshal(plain, &made) == nil && made.TaskID == id {
				d.Secret = &made
			}
		}
	}
	v.Title, v.Nav, v.Data = "Webhooks of "+t.Task.Name, "tasks", d
	return c.render(w, http.StatusOK, "webhooks", v)
}

// showSecret hands a made or rotated secret to the next page view, once.
func (c *Console) showSecret(w http.ResponseWriter, r *http.Request, v *view, made api.WebhookView) error {
	plain, err := json.Marshal(made)
	if err != nil {
		return err
	}
	sealed := newTokenKey(v.CSRF).Seal(nil, nil, plain, []byte(v.User+"\x00webhook"))
	http.SetCookie(w, &http.Cookie{Name: newWebhookCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: webhooksPath(made.TaskID), MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: auth.OverTLS(r)})
	return redirect(w, r, webhooksPath(made.TaskID), "")
}

func (c *Console) addWebhook(w http.ResponseWriter, r *http.Request, v *view) error {
	f := r.PostForm
	in := api.WebhookIn{TaskID: r.PathValue("id"), Name: f.Get("name"), URL: f.Get("url"), Events: f["events"], On: f.Get("on"), Format: f.Get("format")}
	made, err := c.svc.CreateWebhook(r.Context(), v.caller, in)
	if err != nil {
		return err
	}
	return c.showSecret(w, r, v, made)
}

func (c *Console) changeWebhook(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx, id := r.Context(), r.PathValue("wid")
	back := webhooksPath(r.PathValue("id"))
	switch r.PathValue("action") {
	case "disable", "enable":
		off := r.PathValue("action") == "disable"
		if _, err := c.svc.UpdateWebhook(ctx, v.caller, id, api.WebhookChange{Disabled: &off}); err != nil {
			return err
		}
		return redirect(w, r, back, "saved")
	case "rotate":
		made, err := c.svc.RotateWebhookSecret(ctx, v.caller, id)
		if err != nil {
			return err
		}
		return c.showSecret(w, r, v, made)
	case "remove":
		if _, err := c.svc.DeleteWebhook(ctx, v.caller, id); err != nil {
			return err
		}
		return redirect(w, r, back, "removed")
	}
	return duet.Errorf(duet.CodeNotFound, "no such action")
}

func (c *Console) redeliver(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.Redeliver(r.Context(), v.caller, r.PathValue("did")); err != nil {
		return err
	}
	return redirect(w, r, webhooksPath(r.PathValue("id")), "redelivered")
}

// ---- broken cases ----

type alertsData struct {
	Alerts []*duet.ContractAlert
}

// alerts lists the contract alerts of the tasks the user can see, broken
// first: what the nav's badge counts.
func (c *Console) alerts(w http.ResponseWriter, r *http.Request, v *view) error {
	list, err := c.svc.AllContractAlerts(r.Context(), v.caller)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Dependency alerts", "alerts", alertsData{Alerts: list.Alerts}
	return c.render(w, http.StatusOK, "alerts", v)
}

// joinLines is for the template.
func joinLines(s []string) string { return strings.Join(s, "; ") }

// ---- vault secrets ----

type secretsData struct {
	List api.SecretList
	// Other is set when an administrator looks at another user's.
	Other bool
}

// secrets lists the user's vault secrets (an administrator: another's
// with ?user=): names and times, never values.
func (c *Console) secrets(w http.ResponseWriter, r *http.Request, v *view) error {
	user := r.URL.Query().Get("user")
	list, err := c.svc.ListSecrets(r.Context(), v.caller, user)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Secrets", "secrets", secretsData{List: list, Other: list.User != v.User}
	return c.render(w, http.StatusOK, "secrets", v)
}

// setSecret stores a secret; the value is never rendered, not even in an
// error (the form comes back empty).
func (c *Console) setSecret(w http.ResponseWriter, r *http.Request, v *view) error {
	value := r.PostForm.Get("value")
	r.PostForm.Del("value")
	if _, err := c.svc.SetSecret(r.Context(), v.caller, api.SecretIn{Name: strings.TrimSpace(r.PostForm.Get("name")), Value: value}); err != nil {
		return err
	}
	return redirect(w, r, "/secrets", "saved")
}

func (c *Console) deleteSecret(w http.ResponseWriter, r *http.Request, v *view) error {
	user := r.PostForm.Get("user")
	if _, err := c.svc.DeleteSecret(r.Context(), v.caller, user, r.PathValue("name")); err != nil {
		return err
	}
	if user != "" && user != v.User {
		return redirect(w, r, "/secrets?user="+url.QueryEscape(user), "deleted")
	}
	return redirect(w, r, "/secrets", "deleted")
}
