package webui

import (
	"cmp"
	"net/http"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/trace"
)

// The console's trace viewer: the files of a case's trace zip (its viewer
// page, script, styles, screenshots, frames, DOM snapshots, HAR), served
// as the trace keeps them, to the run's executor only (api.TraceFile). The
// viewer's page and script are Duet's, under the console's policy; a DOM
// snapshot is the site under test's page, served under a sandbox policy of
// its own (trace.SnapshotCSP: no script, a unique origin, nothing loaded)
// and shown by the viewer in a sandboxed frame.

// registerEvidence adds the console's evidence pages to mux.
func (c *Console) registerEvidence(mux *http.ServeMux) {
	mux.Handle("GET /runs/{id}/cases/{case}/trace", c.page(func(w http.ResponseWriter, r *http.Request, v *view) error {
		http.Redirect(w, r, r.URL.Path+"/", http.StatusSeeOther)
		return nil
	}))
	mux.Handle("GET /runs/{id}/cases/{case}/trace/{file...}", c.page(c.traceFile))
	// A baseline's pages (baseline.go); the list is among routes().
	for pattern, rt := range map[string]route{
		"GET /baselines/{id}":          {fn: c.baseline},
		"GET /baselines/{id}/image":    {c.baselineImage, qs("which")},
		"POST /baselines/{id}/approve": {fn: c.decideBaseline(true)},
		"POST /baselines/{id}/reject":  {fn: c.decideBaseline(false)},
		// The replay as a video, where the instance has ffmpeg.
		"GET /runs/{id}/cases/{case}/video": {c.traceVideo, qs("format")},
	} {
		mux.Handle(pattern, c.page(c.checkQuery(rt)))
	}
}

// traceFile serves one file of a case's trace ("" is the viewer).
func (c *Console) traceFile(w http.ResponseWriter, r *http.Request, v *view) error {
	f, err := c.svc.TraceFile(r.Context(), v.caller, r.PathValue("id"), r.PathValue("case"), r.PathValue("file"))
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	if f.Snapshot {
		h.Set("Content-Security-Policy", trace.SnapshotCSP)
	}
	if r.PathValue("file") == "network.har" {
		h.Set("Content-Disposition", `attachment; filename="network.har"`)
	}
	_, err = w.Write(f.Data)
	return err
}

// traceVideo serves the replay of a case's trace as a webm (or ?format=mp4)
// video (api.TraceVideo).
func (c *Console) traceVideo(w http.ResponseWriter, r *http.Request, v *view) error {
	format := cmp.Or(r.URL.Query().Get("format"), trace.VideoWebM)
	if format != trace.VideoWebM && format != trace.VideoMP4 {
		return duet.Errorf(duet.CodeInvalidArgument, "format: want webm or mp4, got %.40q", format)
	}
	data, x, err := c.svc.TraceVideo(r.Context(), v.caller, r.PathValue("id"), r.PathValue("case"), format)
	if err != nil {
		return err
	}
	api.WriteVideo(w, data, format, "replay-"+r.PathValue("id")+"-"+x.CaseKey)
	return nil
}
