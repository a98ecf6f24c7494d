package api

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/trace"
)

// Traces: the evidence a case kept (package trace), served to its run's
// executor only — as a zip over REST and the CLI, file by file to the
// console's viewer, and summarised for models over MCP.

// traceRoutes are the REST routes of traces.
func traceRoutes() []*route {
	return []*route{
		{method: "GET", path: Prefix + "/runs/{runId}/cases/{case}/trace", id: "getTrace", tag: "runs", status: http.StatusOK, ctype: "application/zip",
			summary: "The trace of a case (zip: viewer, trace.json, network.har, screenshots, DOM snapshots, replay frames); ?format=summary gives the JSON summary a model reads. Only the run's executor gets it",
			params: []param{path("runId", "the run's id"), path("case", "the case's key, case id or execution id"),
				query("format", "zip (default) or summary")},
			serve: (*Handler).trace},
		{method: "GET", path: Prefix + "/runs/{runId}/cases/{case}/trace/video", id: "getTraceVideo", tag: "runs", status: http.StatusOK, ctype: "video/webm",
			summary: "The replay of a case's trace (its screencast frames) as a video, encoded with ffmpeg where the instance has it (FFMPEG_NOT_FOUND where not). Only the run's executor gets it",
			params: []param{path("runId", "the run's id"), path("case", "the case's key, case id or execution id"),
				query("format", "webm (default) or mp4")},
			serve: (*Handler).traceVideo},
	}
}

func (h *Handler) traceVideo(w http.ResponseWriter, r *http.Request, c duet.Caller) (any, error) {
	runID, ref := r.PathValue("runId"), r.PathValue("case")
	format := cmp.Or(r.URL.Query().Get("format"), trace.VideoWebM)
	if format != trace.VideoWebM && format != trace.VideoMP4 {
		return nil, bad(duet.Errorf(duet.CodeInvalidArgument, "format: want webm or mp4, got %.40q", format))
	}
	data, x, err := h.svc.TraceVideo(r.Context(), c, runID, ref, format)
	if err != nil {
		return nil, err
	}
	WriteVideo(w, data, format, fmt.Sprintf("replay-%s-%s", runID, x.CaseKey))
	return nil, nil
}

// WriteVideo writes an exported replay as a file named name.FORMAT.
func WriteVideo(w http.ResponseWriter, data []byte, format, name string) {
	w.Header().Set("Content-Type", "video/"+format)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s"`, name, format))
	w.Write(data)
}

// TraceVideo returns the replay of a case's trace as a webm or mp4 video
// (trace.Video), governed and disclosed like Trace: to the run's executor
// only. The video is bounded by the call's result budget and by
// trace.DefaultVideoTimeout. Returns NOT_FOUND, PERMISSION_DENIED,
// INVALID_ARGUMENT, FFMPEG_NOT_FOUND, TIMEOUT, TOO_LARGE.
func (s *Service) TraceVideo(ctx context.Context, c duet.Caller, runID, ref, format string) ([]byte, *duet.Execution, error) {
	var data []byte
	var x *duet.Execution
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "getTraceVideo", Name: ref}, func(ctx context.Context) (int, error) {
		zipped, ex, err := report.Trace(ctx, s.d.Store, s.d.Artifacts, c.UserID, runID, ref)
		if err != nil {
			return 0, err
		}
		a, err := trace.Open(zipped)
		if err != nil {
			return 0, err
		}
		var o trace.VideoOptions
		if b := catalog.ResultBudget(ctx); b > 0 {
			o.MaxBytes = int64(b)
		}
		data, err = trace.Video(ctx, a, format, o)
		x = ex
		return len(data), err
	})
	return data, x, err
}

func (h *Handler) trace(w http.ResponseWriter, r *http.Request, c duet.Caller) (any, error) {
	runID, ref := r.PathValue("runId"), r.PathValue("case")
	switch f := r.URL.Query().Get("format"); f {
	case "", "zip":
		data, x, err := h.svc.Trace(r.Context(), c, runID, ref)
		if err != nil {
			return nil, err
		}
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="trace-%s-%s.zip"`, runID, x.CaseKey))
		w.Write(data)
	case "summary":
		data, err := h.svc.TraceSummary(r.Context(), c, runID, ref)
		if err != nil {
			return nil, err
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	default:
		return nil, bad(duet.Errorf(duet.CodeInvalidArgument, "format: want zip or summary, got %.40q", f))
	}
	return nil, nil
}

// Trace returns the trace zip of a case of a run (report.Trace): to the
// run's executor only. Returns NOT_FOUND, PERMISSION_DENIED.
func (s *Service) Trace(ctx context.Context, c duet.Caller, runID, ref string) ([]byte, *duet.Execution, error) {
	var data []byte
	var x *duet.Execution
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "getTrace", Name: ref}, func(ctx context.Context) (int, error) {
		var err error
		data, x, err = report.Trace(ctx, s.d.Store, s.d.Artifacts, c.UserID, runID, ref)
		return len(data), err
	})
	return data, x, err
}

// TraceSummary returns the summary of a case's trace a model can read
// (report.TraceSummary). Returns NOT_FOUND, PERMISSION_DENIED.
func (s *Service) TraceSummary(ctx context.Context, c duet.Caller, runID, ref string) ([]byte, error) {
	var data []byte
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "getTraceSummary", Name: ref}, func(ctx context.Context) (int, error) {
		var err error
		data, err = report.TraceSummary(ctx, s.d.Store, s.d.Artifacts, c.UserID, runID, ref, report.TraceSummaryBytes)
		return len(data), err
	})
	return data, err
}

// TraceFile is one file of a case's trace, for the console's viewer.
type TraceFile struct {
	Data        []byte
	ContentType string
	// Snapshot is true for a DOM snapshot: a page the site under test
	// made, served only under trace.SnapshotCSP.
	Snapshot bool
}

// TraceFile returns the file name of the trace of a case ("" is the
// viewer's page), governed and disclosed like Trace. A few traces stay
// open in memory, so the viewer's dozens of files cost one read of the zip.
// Returns NOT_FOUND, PERMISSION_DENIED.
func (s *Service) TraceFile(ctx context.Context, c duet.Caller, runID, ref, name string) (TraceFile, error) {
	var out TraceFile
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "getTraceFile", Name: ref}, func(ctx context.Context) (int, error) {
		run, x, err := report.FindExecution(ctx, s.d.Store, c.UserID, runID, ref)
		if err != nil {
			return 0, err
		}
		a := traceCache.get(run.ID + "/" + x.ID)
		if a == nil || duet.RunDisclosure(c.UserID, run) != duet.DiscloseFull {
			data, _, err := report.Trace(ctx, s.d.Store, s.d.Artifacts, c.UserID, runID, x.ID)
			if err != nil {
				return 0, err
			}
			if a, err = trace.Open(data); err != nil {
				return 0, err
			}
			traceCache.put(run.ID+"/"+x.ID, a)
		}
		data, ct, err := a.File(name)
		if err != nil {
			return 0, err
		}
		out = TraceFile{Data: data, ContentType: ct, Snapshot: trace.IsSnapshot(name)}
		return len(data), nil
	})
	return out, err
}

// traceCache keeps the last few traces opened for the viewer.
var traceCache = &archiveCache{}

type archiveCache struct {
	mu    sync.Mutex
	keys  []string
	items map[string]*trace.Archive
}

const archiveCacheSize = 4

func (c *archiveCache) get(key string) *trace.Archive {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[key]
}

func (c *archiveCache) put(key string, a *trace.Archive) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[string]*trace.Archive{}
	}
	if _, ok := c.items[key]; !ok {
		c.keys = append(c.keys, key)
	}
	c.items[key] = a
	for len(c.keys) > archiveCacheSize {
		delete(c.items, c.keys[0])
		c.keys = c.keys[1:]
	}
}

// evidenceRoutes are the REST routes of issue 28's evidence: traces (and,
// in baseline.go, visual baselines).
func evidenceRoutes() []*route {
	return append(traceRoutes(), baselineRoutes()...)
}

// TraceOf is what a run's page says of an execution's trace.
type TraceOf struct {
	Bytes  int64
	Replay bool // it may hold a replay: the page offers its video
}

// TracesOf returns, for a run's page, the trace of each of run's
// executions that kept one, by execution id — to the run's executor only
// (an empty map for anyone else: the links would only be refused).
func (s *Service) TracesOf(ctx context.Context, c duet.Caller, run catalog.GetRunOut) map[string]*TraceOf {
	out := map[string]*TraceOf{}
	tr, ok := s.d.Artifacts.(report.TraceReader)
	if !ok || run.Disclosure != duet.DiscloseFull || c.UserID == "" || run.Run.TriggeredBy != c.UserID {
		return out
	}
	for _, x := range run.Executions {
		if n, ok := tr.HasTrace(ctx, run.Run.ID, x.ID); ok {
			out[x.ID] = &TraceOf{Bytes: n, Replay: !tr.NoReplay(ctx, run.Run.ID, x.ID)}
		}
	}
	return out
}
