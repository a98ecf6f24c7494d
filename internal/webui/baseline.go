package webui

import (
	"net/http"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
)

// The console's Baselines pages: the caller's visual baselines
// (assertScreenshot), a pending one beside the one in use with a slider
// and the difference, and the approve and reject buttons — the caller's
// own only (api.Service's baseline methods; every decision audited).

type baselinesData struct {
	Status   string
	Statuses []string
	List     api.BaselineList
}

func (c *Console) baselines(w http.ResponseWriter, r *http.Request, v *view) error {
	status := r.URL.Query().Get("status")
	if !r.URL.Query().Has("status") {
		status = string(duet.BaselinePending)
	}
	list, err := c.svc.ListBaselines(r.Context(), v.caller, api.BaselinesIn{Status: duet.BaselineStatus(status)})
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Baselines", "baselines", baselinesData{Status: status, Statuses: []string{"pending", "approved", "rejected"}, List: list}
	return c.render(w, http.StatusOK, "baselines", v)
}

func (c *Console) baseline(w http.ResponseWriter, r *http.Request, v *view) error {
	d, err := c.svc.GetBaseline(r.Context(), v.caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Baseline "+d.Baseline.Name, "baselines", d
	return c.render(w, http.StatusOK, "baseline", v)
}

func (c *Console) baselineImage(w http.ResponseWriter, r *http.Request, v *view) error {
	data, err := c.svc.BaselineImage(r.Context(), v.caller, r.PathValue("id"), r.URL.Query().Get("which"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "private, no-store")
	_, err = w.Write(data)
	return err
}

func (c *Console) decideBaseline(approve bool) func(w http.ResponseWriter, r *http.Request, v *view) error {
	return func(w http.ResponseWriter, r *http.Request, v *view) error {
		b, err := c.svc.DecideBaseline(r.Context(), v.caller, r.PathValue("id"), approve)
		if err != nil {
			return err
		}
		return redirect(w, r, "/baselines/"+escapePath(b.ID), string(b.Status))
	}
}
