package webui_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
)

// pngOf is a w×h PNG of one colour.
func pngOf(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBaselinePages: alice sees her pending candidate beside the baseline
// in use, with the slider and the difference image, approves it in the
// console (audited), and it is approved; bob, with whom the task is
// shared, can neither see nor decide it.
func TestBaselinePages(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {"task: {name: looks, baseURL: http://127.0.0.1:9, sharedWith: [bob]}\ncases:\n  - key: home\n    title: Home\n    steps:\n      - set: {x: '1'}\n"}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskID := strings.TrimPrefix(strings.Split(resp.Header.Get("Location"), "?")[0], "/tasks/")
	cases, _, _, err := e.App.Store.FindCases(t.Context(), duet.CaseFilter{TaskID: taskID})
	if err != nil || len(cases) != 1 {
		t.Fatalf("cases: %v %v", cases, err)
	}
	key := duet.BaselineKey{TaskID: taskID, CaseID: cases[0].ID, Name: xss, Device: "desktop", Environment: "http://127.0.0.1:9", Owner: "alice"}
	ratio := 0.25
	l, x := e.HeldExecution("alice", taskID, cases[0].ID)
	first := &duet.Baseline{BaselineKey: key, CaseKey: "home", Fingerprint: "f", SHA256: "1", Width: 4, Height: 3, RunID: l.RunID, ExecutionID: x, Image: pngOf(t, 4, 3, color.RGBA{255, 255, 255, 255})}
	cand := &duet.Baseline{BaselineKey: key, CaseKey: "home", Fingerprint: "f", SHA256: "2", Width: 4, Height: 3, RunID: l.RunID, ExecutionID: x, DiffRatio: &ratio, Image: pngOf(t, 4, 3, color.RGBA{255, 0, 0, 255})}
	for _, b := range []*duet.Baseline{first, cand} {
		if err := e.App.Store.CreateBaseline(t.Context(), l, b); err != nil {
			t.Fatal(err)
		}
	}

	status, body, _ = alice.get("/baselines")
	if status != http.StatusOK || !strings.Contains(body, `data-baseline="`+cand.ID+`"`) || !strings.Contains(body, "25.00%") || strings.Contains(body, xss) {
		t.Fatalf("/baselines: %d %.3000s", status, body)
	}
	status, body, _ = alice.get("/baselines/" + cand.ID)
	for _, want := range []string{"data-slider", "/baselines/" + first.ID + "/image", "/baselines/" + cand.ID + "/image?which=diff", `id="approve-baseline"`, "100.00% of the pixels differ from v1"} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("/baselines/%s lacks %q: %d %.3000s", cand.ID, want, status, body)
		}
	}
	status, body, resp = alice.get("/baselines/" + cand.ID + "/image?which=diff")
	if status != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("the diff image: %d %s", status, resp.Header.Get("Content-Type"))
	}
	if diff, err := png.Decode(strings.NewReader(body)); err != nil || diff.Bounds().Dx() != 4 {
		t.Fatalf("the diff image: %v", err)
	}

	bob := signIn(t, e, "bob")
	if status, _, _ := bob.get("/baselines/" + cand.ID); status != http.StatusNotFound {
		t.Errorf("bob sees alice's baseline: %d", status)
	}
	if status, _, _ := bob.get("/baselines/" + cand.ID + "/image"); status != http.StatusNotFound {
		t.Errorf("bob sees alice's baseline's image: %d", status)
	}
	if status, _, _ := bob.post("/baselines/"+cand.ID+"/approve", nil); status != http.StatusNotFound {
		t.Errorf("bob approves alice's baseline: %d", status)
	}
	if _, body, _ := bob.get("/baselines?status="); strings.Contains(body, cand.ID) {
		t.Errorf("bob's list shows alice's baseline")
	}

	status, _, resp = alice.post("/baselines/"+cand.ID+"/approve", nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/baselines/"+cand.ID) {
		t.Fatalf("approve: %d %v", status, resp.Header)
	}
	if _, body, _ := alice.get("/baselines/" + cand.ID); !strings.Contains(body, `id="baseline-status">approved</span> by alice`) || strings.Contains(body, `id="approve-baseline"`) {
		t.Fatalf("after approving: %.3000s", body)
	}
	b, err := e.App.Store.FindBaseline(t.Context(), "alice", cand.ID)
	if err != nil || b.Status != duet.BaselineApproved || b.DecidedBy != "alice" {
		t.Fatalf("stored: %+v %v", b, err)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Method: "approveBaseline"})
	if err != nil {
		t.Fatal(err)
	}
	var ok, refused bool
	for _, r := range recs {
		ok = ok || (r.Caller == "alice" && r.Tool == cand.ID && r.Outcome == duet.OutcomeOK && r.CallSource == duet.SourceWeb)
		refused = refused || (r.Caller == "bob" && r.Outcome == duet.CodeNotFound)
	}
	if !ok || !refused {
		t.Fatalf("the audit of the decisions: %+v", recs)
	}
}
