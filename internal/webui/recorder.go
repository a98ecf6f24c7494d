package webui

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/recorder"
)

// The recorder's pages (docs/console.md, "Recording a case"): a task's
// "Record a case" opens a live browser session on the server
// (internal/recorder); its page shows the page's frames as server-sent
// events, sends the tester's mouse and keys back, and saves the recorded
// case through the apply path. Every route goes through page() (the
// session cookie, CSRF on each change, the body's bound) and each
// operation through the governance pipeline with one audit record; a
// session is its owner's alone: anyone else gets NOT_FOUND.

// recorderRoutes are the recorder's routes, added to routes().
func (c *Console) recorderRoutes(m map[string]route) {
	m["POST /tasks/{id}/record"] = route{fn: c.startRecording}
	m["GET /record/{rid}"] = route{fn: c.recording}
	m["GET /record/{rid}/stream"] = route{fn: c.recordingStream}
	m["POST /record/{rid}/act"] = route{fn: c.recordingAct}
	m["POST /record/{rid}/save"] = route{fn: c.saveRecording}
	m["POST /record/{rid}/try"] = route{fn: c.tryRecording}
	m["POST /record/{rid}/close"] = route{fn: c.closeRecording}
	m["POST /tasks/validate"] = route{fn: c.validateSuite}
	m["GET /schema/suite.json"] = route{fn: c.suiteSchema}
}

// suiteSchema serves the suite format's JSON Schema (compiler.SuiteSchema,
// built into the binary): the editor completes keys and enum values from it.
func (c *Console) suiteSchema(w http.ResponseWriter, r *http.Request, v *view) error {
	w.Header().Set("Content-Type", "application/schema+json")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	_, err := w.Write(suiteSchemaJSON())
	return err
}

var suiteSchemaJSON = sync.OnceValue(compiler.SuiteSchemaJSON)

// validateSuite compiles a suite for the editor of the apply page
// (api.ValidateSuite; JSON {source} in, the problems at their lines out).
func (c *Console) validateSuite(w http.ResponseWriter, r *http.Request, v *view) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return formError(err)
	}
	var in struct {
		Source string `json:"source"`
	}
	if err := api.DecodeJSON(body, &in, "the suite"); err != nil {
		api.WriteError(w, StatusOf(c.o.Codes, err), duet.ErrorCode(err), duet.ErrorMessage(err))
		return nil
	}
	out, err := c.svc.ValidateSuite(r.Context(), v.caller, api.ApplyIn{Source: in.Source})
	if err != nil {
		api.WriteError(w, StatusOf(c.o.Codes, err), duet.ErrorCode(err), duet.ErrorMessage(err))
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(out)
}

func (c *Console) recorderOf() (*recorder.Manager, error) {
	if c.o.Recorder == nil {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "the recorder is not available in this process")
	}
	return c.o.Recorder, nil
}

// live returns the signed-in user's recording session of the path, in a
// governed operation op (its audit record names the session).
func (c *Console) live(ctx context.Context, v *view, rid, op string, args any, fn func(ctx context.Context, l *recorder.Live) error) error {
	m, err := c.recorderOf()
	if err != nil {
		return err
	}
	return c.svc.Govern(ctx, v.caller, op, args, func(ctx context.Context) error {
		l, err := m.Get(v.User, rid)
		if err != nil {
			return err
		}
		return fn(ctx, l)
	})
}

func (c *Console) startRecording(w http.ResponseWriter, r *http.Request, v *view) error {
	m, err := c.recorderOf()
	if err != nil {
		return err
	}
	var rid string
	in := api.RecordIn{TaskID: r.PathValue("id"), Environment: strings.TrimSpace(r.PostForm.Get("environment")), Device: strings.TrimSpace(r.PostForm.Get("device"))}
	err = c.svc.Record(r.Context(), v.caller, in, func(ctx context.Context, t api.RecordTarget) error {
		l, err := m.Start(ctx, recorder.Start{Owner: v.User, TaskID: t.TaskID, Environment: t.Environment, BaseURL: t.BaseURL, Device: t.Device, TestIDAttr: t.TestIDAttr})
		if err != nil {
			return err
		}
		rid = l.ID
		return nil
	})
	if err != nil {
		return err
	}
	return redirect(w, r, "/record/"+rid, "")
}

type recordingData struct {
	ID, TaskID, BaseURL, Device string
	Width, Height               int
	YAML                        string
	Key, Title                  string
	Error                       string
}

func (c *Console) recording(w http.ResponseWriter, r *http.Request, v *view) error {
	return c.live(r.Context(), v, r.PathValue("rid"), "viewRecording", nil, func(ctx context.Context, l *recorder.Live) error {
		return c.renderRecording(w, http.StatusOK, v, l, "", "", "")
	})
}

func (c *Console) renderRecording(w http.ResponseWriter, status int, v *view, l *recorder.Live, key, title, errMsg string) error {
	if key == "" {
		key = "recorded-" + time.Now().UTC().Format("20060102-150405")
	}
	if title == "" {
		title = "Recorded case"
	}
	d := recordingData{ID: l.ID, TaskID: l.TaskID, BaseURL: l.BaseURL, Device: l.Device, Key: key, Title: title, Error: errMsg,
		YAML: recorder.CaseYAML(key, title, l.Steps())}
	if dev, err := browser.DeviceByName(l.Device); err == nil {
		d.Width, d.Height = dev.Width, dev.Height
	}
	v.Title, v.Nav, v.Data = "Record a case", "tasks", d
	return c.render(w, status, "record", v)
}

// maxStream bounds one stream of a live view (the page reconnects).
const maxStream = 10 * time.Minute

// recordingStream sends the live view: "frame" events (data: a JPEG as a
// data: URL and the viewport's size, at most the recorder's frames a
// second), "state" events (the steps and their YAML) when they change,
// and "end" when the session closes. Frames are never stored.
func (c *Console) recordingStream(w http.ResponseWriter, r *http.Request, v *view) error {
	var l *recorder.Live
	if err := c.live(r.Context(), v, r.PathValue("rid"), "watchRecording", nil, func(ctx context.Context, got *recorder.Live) error {
		l = got
		return nil
	}); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(event string, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	deadline := time.NewTimer(maxStream)
	defer deadline.Stop()
	var lastFrame *browser.LiveFrame
	lastVersion := -1
	for {
		ch, closed := l.Changed()
		if f := l.Frame(); f != nil && f != lastFrame {
			lastFrame = f
			if !send("frame", map[string]any{"src": "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(f.JPEG), "w": f.Width, "h": f.Height}) {
				return nil
			}
		}
		if st := l.State(); st.Version != lastVersion {
			lastVersion = st.Version
			if !send("state", stateView(st)) {
				return nil
			}
		}
		if closed {
			send("end", map[string]any{})
			return nil
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return nil
		case <-deadline.C:
			return nil
		}
	}
}

// stepView is a recorded step as the page lists it.
type stepView struct {
	YAML     string `json:"yaml"`
	HasValue bool   `json:"hasValue"`
	Value    string `json:"value"`
}

func stateView(st recorder.State) map[string]any {
	steps := make([]stepView, len(st.Steps))
	for i, s := range st.Steps {
		steps[i] = stepView{YAML: strings.TrimPrefix(strings.TrimSpace(s.YAML("")), "- "), Value: s.Value,
			HasValue: s.Kind != recorder.KindClick && s.Kind != recorder.KindCheck && s.Kind != recorder.KindUncheck && s.Kind != recorder.KindAssertVisible}
	}
	return map[string]any{"steps": steps, "yaml": recorder.CaseYAML("KEY", "TITLE", st.Steps), "error": st.Error, "version": st.Version}
}

// actIn is one action of the live view (POST /record/{rid}/act, JSON).
type actIn struct {
	Op     string    `json:"op"` // input, pick, assertURL, open, delete, setValue
	Events []inputEv `json:"events,omitempty"`
	X      float64   `json:"x,omitempty"`
	Y      float64   `json:"y,omitempty"`
	Assert string    `json:"assert,omitempty"`
	URL    string    `json:"url,omitempty"`
	Step   int       `json:"step,omitempty"` // 1 the first
	Value  string    `json:"value,omitempty"`
}

// inputEv is a mouse or key event of the tester's.
type inputEv struct {
	Kind       string  `json:"kind"` // mouse, key
	Type       string  `json:"type"`
	X          float64 `json:"x,omitempty"`
	Y          float64 `json:"y,omitempty"`
	Button     string  `json:"button,omitempty"`
	ClickCount int     `json:"clickCount,omitempty"`
	DeltaX     float64 `json:"deltaX,omitempty"`
	DeltaY     float64 `json:"deltaY,omitempty"`
	Modifiers  int     `json:"modifiers,omitempty"`
	Key        string  `json:"key,omitempty"`
	Code       string  `json:"code,omitempty"`
	Text       string  `json:"text,omitempty"`
}

// maxInputEvents bounds the events of one input action.
const maxInputEvents = 200

func (c *Console) recordingAct(w http.ResponseWriter, r *http.Request, v *view) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return formError(err)
	}
	var in actIn
	if err := api.DecodeJSON(body, &in, "the action"); err != nil {
		return err
	}
	if len(in.Events) > maxInputEvents {
		return duet.Errorf(duet.CodeTooLarge, "%d input events in one request; at most %d", len(in.Events), maxInputEvents)
	}
	var out any = map[string]any{}
	err = c.live(r.Context(), v, r.PathValue("rid"), "recorder."+in.Op, in, func(ctx context.Context, l *recorder.Live) error {
		switch in.Op {
		case "input":
			for _, e := range in.Events {
				var err error
				switch e.Kind {
				case "mouse":
					err = l.Mouse(ctx, browser.MouseInput{Type: e.Type, X: e.X, Y: e.Y, Button: e.Button, ClickCount: e.ClickCount, DeltaX: e.DeltaX, DeltaY: e.DeltaY, Modifiers: e.Modifiers})
				case "key":
					err = l.Key(ctx, browser.KeyInput{Type: e.Type, Key: e.Key, Code: e.Code, Text: e.Text, Modifiers: e.Modifiers})
				default:
					err = duet.Errorf(duet.CodeInvalidArgument, "an input event is mouse or key, not %q", e.Kind)
				}
				if err != nil {
					return err
				}
			}
			return nil
		case "pick":
			st, err := l.Pick(ctx, in.X, in.Y, in.Assert)
			out = st
			return err
		case "assertURL":
			st, err := l.AssertURL(ctx)
			out = st
			return err
		case "open":
			return l.Open(ctx, in.URL)
		case "delete":
			return l.Delete(in.Step - 1)
		case "setValue":
			return l.SetValue(in.Step-1, in.Value)
		}
		return duet.Errorf(duet.CodeInvalidArgument, "unknown action %q (input, pick, assertURL, open, delete, setValue)", in.Op)
	})
	if err != nil {
		api.WriteError(w, StatusOf(c.o.Codes, err), duet.ErrorCode(err), duet.ErrorMessage(err))
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(out)
}

// saveRecording saves the case: the YAML the tester may have edited
// (source), or else the recorded steps with key and title, through the
// apply path (api.SaveCase). A case that does not compile is shown again
// with the compiler's messages.
func (c *Console) saveRecording(w http.ResponseWriter, r *http.Request, v *view) error {
	f := r.PostForm
	var l *recorder.Live
	err := c.live(r.Context(), v, r.PathValue("rid"), "viewRecording", nil, func(ctx context.Context, got *recorder.Live) error {
		l = got
		return nil
	})
	if err != nil {
		return err
	}
	key, title := strings.TrimSpace(f.Get("key")), strings.TrimSpace(f.Get("title"))
	src := f.Get("source")
	if strings.TrimSpace(src) == "" {
		src = l.YAML(key, title)
	}
	saved, err := c.svc.SaveCase(r.Context(), v.caller, api.SaveCaseIn{TaskID: l.TaskID, Source: src})
	if err != nil {
		if duet.ErrorCode(err) == duet.CodeInvalidArgument {
			return c.renderRecording(w, StatusOf(c.o.Codes, err), v, l, key, title, duet.ErrorMessage(err))
		}
		return err
	}
	return redirect(w, r, "/cases/"+saved.CaseID, "saved")
}

// tryIn is a tryout of the live view (POST /record/{rid}/try, JSON): the
// case as the tester is writing it, and the steps to run.
type tryIn struct {
	Source string `json:"source"`
	From   int    `json:"from"`
	To     int    `json:"to,omitempty"`
}

// tryRecording runs steps of the case being written on the session's
// page ("Try this step"; api.TrySteps, Live.Try): JSON out, how each step
// went, the variables the session's tryouts saved (redacted) and a
// screenshot of the page after them. Nothing is saved; no run starts.
func (c *Console) tryRecording(w http.ResponseWriter, r *http.Request, v *view) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return formError(err)
	}
	var in tryIn
	if err := api.DecodeJSON(body, &in, "the tryout"); err != nil {
		api.WriteError(w, StatusOf(c.o.Codes, err), duet.ErrorCode(err), duet.ErrorMessage(err))
		return nil
	}
	var l *recorder.Live
	err = c.live(r.Context(), v, r.PathValue("rid"), "viewRecording", nil, func(ctx context.Context, got *recorder.Live) error {
		l = got
		return nil
	})
	var res *engine.TryResult
	if err == nil {
		err = c.svc.TrySteps(r.Context(), v.caller, api.TryStepsIn{TaskID: l.TaskID, Source: in.Source, From: in.From, To: in.To}, func(ctx context.Context, t *duet.Task, cs *duet.Case) error {
			var err error
			res, err = l.Try(ctx, recorder.TryIn{Executor: v.User, Task: t, Steps: cs.Steps, From: in.From, To: in.To})
			return err
		})
	}
	if err != nil {
		api.WriteError(w, StatusOf(c.o.Codes, err), duet.ErrorCode(err), duet.ErrorMessage(err))
		return nil
	}
	out := map[string]any{"status": res.Status, "results": res.Results, "vars": res.Vars}
	if len(res.Screenshot) > 0 {
		out["screenshot"] = "data:image/png;base64," + base64.StdEncoding.EncodeToString(res.Screenshot)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(out)
}

func (c *Console) closeRecording(w http.ResponseWriter, r *http.Request, v *view) error {
	var task string
	if err := c.live(r.Context(), v, r.PathValue("rid"), "closeRecording", nil, func(ctx context.Context, l *recorder.Live) error {
		task = l.TaskID
		l.Close()
		return nil
	}); err != nil {
		return err
	}
	return redirect(w, r, "/tasks/"+task, "")
}
