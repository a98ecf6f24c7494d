package api_test

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"image/color"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/report"
)

// TestJUnitZipOverREST: GET .../report?format=junit&attachments=zip gives
// the executor the JUnit XML and, at the paths its failed case's
// system-out names ([[ATTACHMENT|path]]), the failure screenshot and the
// trace; a colleague the task is shared with gets the XML without them;
// attachments= without format=junit is refused.
func TestJUnitZipOverREST(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	src := strings.Replace(apptest.Suite("evidence"), "  baseURL: http://127.0.0.1:9\n", "  baseURL: http://127.0.0.1:9\n  sharedWith: [bob]\n", 1)
	status, body, _ := e.Call("alice", "POST", api.Prefix+"/tasks", api.ApplyIn{Source: src})
	if status != 200 && status != 201 {
		t.Fatalf("apply: %d %s", status, body)
	}
	applied := decode[duet.ApplyResult](t, body)
	// A failed case as the engine leaves it: the failed step's screenshot
	// and the case's trace in the artifact store.
	ctx := t.Context()
	l, xid := e.HeldExecution("alice", applied.Task.ID, applied.Cases[0].ID)
	shot := pngOf(t, 3, 2, color.RGBA{255, 0, 0, 255})
	shotID, err := e.App.Artifacts.Save(ctx, l.RunID, xid, 1, "failure", shot)
	if err != nil {
		t.Fatal(err)
	}
	traceZip := []byte("PK trace of the failed case")
	if _, err := e.App.Artifacts.SaveTrace(ctx, l.RunID, xid, traceZip); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, r := range []*duet.StepResult{
		{Index: 0, Kind: duet.StepSet, Name: "x", Status: duet.StatusPassed, StartedAt: &now, FinishedAt: &now},
		{Index: 1, Kind: duet.StepAssert, Name: "x == 2", Status: duet.StatusFailed, StartedAt: &now, FinishedAt: &now,
			ErrorCode: duet.CodeAssertionFailed, ErrorMessage: "x is 3", Artifacts: []string{shotID}},
	} {
		if err := e.App.Store.SaveStepResult(ctx, l, xid, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	x := &duet.Execution{ID: xid, Status: duet.StatusFailed, ErrorCode: duet.CodeAssertionFailed, ErrorMessage: "x is 3", StartedAt: &now, FinishedAt: &now}
	if err := e.App.Store.FinishExecution(ctx, l, x); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Store.FinishRun(ctx, l, &duet.Run{ID: l.RunID, Status: duet.StatusFailed, FinishedAt: &now}); err != nil {
		t.Fatal(err)
	}

	path := api.Prefix + "/runs/" + l.RunID + "/report?format=junit&attachments=zip"
	status, body, resp := e.Call("alice", "GET", path, nil)
	if status != 200 || resp.Header.Get("Content-Type") != "application/zip" {
		t.Fatalf("alice's zip: %d %s %.300s", status, resp.Header.Get("Content-Type"), body)
	}
	files := unzipAll(t, body)
	atts := attached(t, files["junit.xml"])
	if len(atts) != 2 {
		t.Fatalf("attachments: %v (files %d)", atts, len(files))
	}
	for _, p := range atts {
		want := shot
		if strings.HasSuffix(p, "trace.zip") {
			want = traceZip
		}
		if !bytes.Equal(files[p], want) {
			t.Errorf("%s: %d bytes in the zip, want %d", p, len(files[p]), len(want))
		}
	}

	status, body, _ = e.Call("bob", "GET", path, nil)
	if status != 200 {
		t.Fatalf("bob's zip: %d %.300s", status, body)
	}
	if files := unzipAll(t, body); len(files) != 1 || len(attached(t, files["junit.xml"])) != 0 {
		t.Errorf("bob's zip holds alice's evidence: %d files", len(files))
	}
	if status, body, _ = e.Call("alice", "GET", api.Prefix+"/runs/"+l.RunID+"/report?format=html&attachments=zip", nil); status != 400 || apptest.ErrCode(body) != duet.CodeInvalidArgument {
		t.Errorf("attachments with html: %d %s", status, body)
	}
}

var attachedLine = regexp.MustCompile(`(?m)^\[\[ATTACHMENT\|([^\]]+)\]\]$`)

func attached(t *testing.T, data []byte) []string {
	t.Helper()
	var got report.JUnitSuites
	if err := xml.Unmarshal(data, &got); err != nil {
		t.Fatalf("junit.xml: %v\n%s", err, data)
	}
	var out []string
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			for _, m := range attachedLine.FindAllStringSubmatch(c.SystemOut, -1) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

func unzipAll(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[zf.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	return files
}
