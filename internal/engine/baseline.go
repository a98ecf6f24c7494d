package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/url"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/pixelmatch"
)

// CheckBaseline compares the screenshot of an assertScreenshot step with
// its baseline (step.Baseliner): the executor's own, for the task, case,
// name, device and environment, at the fingerprint of the steps up to this
// one. With none, it records png as a baseline that awaits approval and
// passes; when png differs past the step's tolerance, it records png as a
// candidate baseline, keeps the expected, actual and diff images as
// artifacts and fails with ASSERTION_FAILED.
func (cr *caseRun) CheckBaseline(ctx context.Context, st *duet.Step, shot []byte) (any, error) {
	ev := st.Evidence
	if ev == nil {
		return nil, duet.Errorf(duet.CodeInternal, "step %d has no body", st.Index)
	}
	// Only its size until there is something to compare it with: a first
	// recording and an identical screenshot decode nothing.
	size, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil {
		return nil, duet.WrapError(duet.CodeBrowserError, err, "assertScreenshot: the screenshot is not a PNG: %v", err)
	}
	store := cr.e.store
	key := duet.BaselineKey{TaskID: cr.task.ID, CaseID: cr.x.CaseID, Name: ev.Name, Device: cr.device(), Environment: origin(cr.task.BaseURL), Owner: cr.run.TriggeredBy}
	fp := fingerprint(cr.x.Steps, st.Index)
	sum := sha256.Sum256(shot)
	record := func(ratio *float64) (*duet.Baseline, error) {
		b := &duet.Baseline{BaselineKey: key, CaseKey: cr.x.CaseKey, CaseVersion: cr.x.CaseVersion, Fingerprint: fp, SHA256: hex.EncodeToString(sum[:]),
			Width: size.Width, Height: size.Height, RunID: cr.run.ID, ExecutionID: cr.x.ID, StepIndex: st.Index, DiffRatio: ratio, Image: shot}
		// A write of the run like its results: refused (LEASE_LOST, the run
		// stopped) once the worker no longer holds it.
		return b, cr.w.do(ctx, func(ctx context.Context, l duet.Lease) error { return store.CreateBaseline(ctx, l, b) })
	}
	out := map[string]any{"name": ev.Name}
	keep := func(what string, data []byte) { cr.keepImage(ctx, st, what, data, out) }

	cur, err := store.FindCurrentBaseline(ctx, key, fp)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		b, err := record(nil)
		if err != nil {
			return nil, err
		}
		keep("actual", shot)
		out["baseline"], out["version"], out["status"] = b.ID, float64(b.Version), string(b.Status)
		out["note"] = "no baseline yet: this screenshot is recorded as one and awaits your approval"
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out["baseline"], out["version"], out["status"] = cur.ID, float64(cur.Version), string(cur.Status)
	if cur.SHA256 == hex.EncodeToString(sum[:]) {
		out["diffPixels"], out["diffRatio"] = 0.0, 0.0
		return out, nil
	}
	n, ratio, why, diffImg, err := compareShot(shot, cur, ev)
	if err != nil {
		return nil, err
	}
	out["diffPixels"], out["diffRatio"] = float64(n), ratio
	if ratio <= ev.MaxDiffPixelRatio {
		return out, nil
	}
	cand, err := cr.candidate(ctx, key, hex.EncodeToString(sum[:]))
	if err != nil {
		return nil, err
	}
	if cand == nil {
		if cand, err = record(&ratio); err != nil {
			return nil, err
		}
	}
	out["candidate"], out["candidateVersion"] = cand.ID, float64(cand.Version)
	keep("expected", cur.Image)
	keep("actual", shot)
	if diffImg != nil {
		var b bytes.Buffer
		if png.Encode(&b, diffImg) == nil {
			keep("diff", b.Bytes())
		}
	}
	return out, duet.Errorf(duet.CodeAssertionFailed, "screenshot %q differs from its %s baseline v%d: %s; the new screenshot is candidate v%d (%s): approve it in the console or with `duet baseline approve %s` if the change is intended",
		ev.Name, cur.Status, cur.Version, why, cand.Version, cand.ID, cand.ID)
}

// keepImage keeps data, an image of st's visual comparison (what:
// expected, actual, diff), as an artifact named in out["images"]; one that
// cannot be kept is logged.
func (cr *caseRun) keepImage(ctx context.Context, st *duet.Step, what string, data []byte, out map[string]any) {
	if cr.e.opts.Artifacts == nil || len(data) == 0 {
		return
	}
	id, err := cr.e.opts.Artifacts.Save(ctx, cr.run.ID, cr.x.ID, st.Index, "baseline-"+st.Evidence.Name+"-"+what, data)
	if err != nil {
		cr.e.log.WarnContext(ctx, "cannot keep a visual comparison's image", "run", cr.run.ID, "step", st.Index, "err", err)
		return
	}
	images, _ := out["images"].(map[string]any)
	if images == nil {
		images = map[string]any{}
		out["images"] = images
	}
	images[what] = id
}

// compareShot compares shot with the baseline cur, pixel by pixel within
// ev's threshold: the pixels that differ, their share (1 when the sizes
// differ), why they are too many when they are, and the diff image.
func compareShot(shot []byte, cur *duet.Baseline, ev *duet.EvidenceStep) (n int, ratio float64, why string, diffImg image.Image, err error) {
	actual, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return 0, 0, "", nil, duet.WrapError(duet.CodeBrowserError, err, "assertScreenshot: the screenshot is not a PNG: %v", err)
	}
	expected, err := png.Decode(bytes.NewReader(cur.Image))
	if err != nil {
		return 0, 0, "", nil, fmt.Errorf("decoding baseline %s: %w", cur.ID, err)
	}
	pixels := actual.Bounds().Dx() * actual.Bounds().Dy()
	n, diffImg, err = pixelmatch.Compare(expected, actual, pixelmatch.Options{Threshold: ev.Threshold})
	ratio = 1.0
	switch {
	case errors.Is(err, pixelmatch.ErrSize):
		why = fmt.Sprintf("the screenshot is %dx%d, its baseline %dx%d", actual.Bounds().Dx(), actual.Bounds().Dy(), expected.Bounds().Dx(), expected.Bounds().Dy())
		n = pixels
	case err != nil:
		return 0, 0, "", nil, err
	case pixels > 0:
		ratio = float64(n) / float64(pixels)
		why = fmt.Sprintf("%d pixels (%.2f%%) differ, more than the %.2f%% allowed", n, ratio*100, ev.MaxDiffPixelRatio*100)
	}
	return n, ratio, why, diffImg, nil
}

// candidate returns the pending baseline of key with the image sum, if one
// was recorded already (the same change, run again), else nil.
func (cr *caseRun) candidate(ctx context.Context, key duet.BaselineKey, sum string) (*duet.Baseline, error) {
	list, err := cr.e.store.FindBaselines(ctx, duet.BaselineFilter{Owner: key.Owner, TaskID: key.TaskID, Status: duet.BaselinePending, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, b := range list {
		if b.BaselineKey == key && b.SHA256 == sum {
			return b, nil
		}
	}
	return nil, nil
}

// device names the device of the case's browser: the run's, else the
// task's, else desktop.
func (cr *caseRun) device() string {
	switch {
	case cr.run.Device != "":
		return cr.run.Device
	case cr.task.Device != "":
		return cr.task.Device
	}
	return "desktop"
}

// origin returns scheme://host of base, the environment a baseline is of.
func origin(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return base
	}
	return u.Scheme + "://" + u.Host
}

// fingerprint identifies the steps up to and including step index, as
// they run (not their names, lines or timeouts): a baseline applies while
// it stays the same.
func fingerprint(steps []duet.Step, index int) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, s := range steps {
		if s.Index > index {
			break
		}
		s.Name, s.Line, s.TimeoutMs = "", 0, 0
		enc.Encode(s)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
