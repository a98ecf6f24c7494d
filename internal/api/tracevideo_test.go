package api_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/trace"
	"github.com/duet-test/duet/internal/trace/ffmpegtest"
)

// tracedRun stores, as alice's worker would, a failed case of a task
// shared with bob whose trace kept three screencast frames; it returns the
// run's id.
func tracedRun(t *testing.T, e *apptest.Env) string {
	t.Helper()
	src := strings.Replace(apptest.Suite("replayed"), "  baseURL: http://127.0.0.1:9\n", "  baseURL: http://127.0.0.1:9\n  sharedWith: [bob]\n", 1)
	status, body, _ := e.Call("alice", "POST", api.Prefix+"/tasks", api.ApplyIn{Source: src})
	if status != 200 && status != 201 {
		t.Fatalf("apply: %d %s", status, body)
	}
	applied := decode[duet.ApplyResult](t, body)
	l, xid := e.HeldExecution("alice", applied.Task.ID, applied.Cases[0].ID)
	frame := func(c color.Gray) []byte {
		img := image.NewGray(image.Rect(0, 0, 64, 48))
		for i := range img.Pix {
			img.Pix[i] = c.Y
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	start := time.Now().Add(-time.Second)
	meta := trace.Meta{RunID: l.RunID, ExecutionID: xid, CaseKey: "sums", CaseTitle: "sums add up", Mode: trace.On, Status: duet.StatusFailed,
		Started: start, Finished: start.Add(900 * time.Millisecond)}
	c := &trace.Capture{Start: start, Viewport: trace.Viewport{Width: 64, Height: 48}, Frames: []trace.CapturedFrame{
		{AtMs: 0, Data: frame(color.Gray{255})}, {AtMs: 300, Data: frame(color.Gray{0})}, {AtMs: 600, Data: frame(color.Gray{128})}}}
	zipped, _, err := trace.Build(meta, c, redact.NewSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Artifacts.SaveTrace(t.Context(), l.RunID, xid, zipped); err != nil {
		t.Fatal(err)
	}
	return l.RunID
}

// TestTraceVideoOverREST: GET .../trace/video gives the executor the
// replay as a webm or an mp4 that ffprobe reads; bob, who may see the run,
// is refused; another format is refused.
func TestTraceVideoOverREST(t *testing.T) {
	ffmpegtest.Require(t)
	t.Parallel()
	e := apptest.New(t, nil)
	runID := tracedRun(t, e)
	path := api.Prefix + "/runs/" + runID + "/cases/sums/trace/video"
	for format, codec := range map[string]string{"": "vp8", "?format=webm": "vp8", "?format=mp4": "h264"} {
		status, body, resp := e.Call("alice", "GET", path+format, nil)
		want := "video/webm"
		if codec == "h264" {
			want = "video/mp4"
		}
		if status != http.StatusOK || resp.Header.Get("Content-Type") != want || !strings.Contains(resp.Header.Get("Content-Disposition"), "replay-"+runID+"-sums.") {
			t.Fatalf("%s: %d %s %s %.200s", format, status, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), body)
		}
		file := filepath.Join(t.TempDir(), "replay")
		os.WriteFile(file, body, 0o644)
		out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", file).Output()
		if err != nil || strings.TrimSpace(string(out)) != codec+",64,48" {
			t.Errorf("%s: ffprobe says %q %v, want %s,64,48", format, out, err, codec)
		}
	}
	if status, body, _ := e.Call("bob", "GET", path, nil); status != http.StatusForbidden || apptest.ErrCode(body) != duet.CodePermissionDenied {
		t.Errorf("bob's video: %d %s", status, body)
	}
	if status, body, _ := e.Call("alice", "GET", path+"?format=gif", nil); status != http.StatusBadRequest || apptest.ErrCode(body) != duet.CodeInvalidArgument {
		t.Errorf("a gif: %d %s", status, body)
	}
}

// TestTraceVideoWithoutFFmpeg: where the instance has no ffmpeg, the video
// is refused with FFMPEG_NOT_FOUND (501) saying what to do; the trace
// itself is still served.
func TestTraceVideoWithoutFFmpeg(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no ffmpeg there
	e := apptest.New(t, nil)
	runID := tracedRun(t, e)
	status, body, _ := e.Call("alice", "GET", api.Prefix+"/runs/"+runID+"/cases/sums/trace/video", nil)
	if status != http.StatusNotImplemented || apptest.ErrCode(body) != duet.CodeFFmpegNotFound || !strings.Contains(string(body), "install it") {
		t.Errorf("no ffmpeg: %d %s", status, body)
	}
	if status, _, _ := e.Call("alice", "GET", api.Prefix+"/runs/"+runID+"/cases/sums/trace", nil); status != http.StatusOK {
		t.Errorf("the trace without ffmpeg: %d", status)
	}
}
