package report_test

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/duet-test/duet/internal/report"
)

var attachmentLine = regexp.MustCompile(`(?m)^\[\[ATTACHMENT\|([^\]]+)\]\]$`)

// attachmentsOf parses JUnit XML as a CI tool does and returns, per
// testcase name, the paths its system-out attaches.
func attachmentsOf(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	var got report.JUnitSuites
	if err := xml.Unmarshal(data, &got); err != nil {
		t.Fatalf("the JUnit output does not parse: %v\n%s", err, data)
	}
	out := map[string][]string{}
	for _, c := range got.Suites[0].Cases {
		for _, m := range attachmentLine.FindAllStringSubmatch(c.SystemOut, -1) {
			out[c.Name] = append(out[c.Name], m[1])
		}
	}
	return out
}

// TestJUnitFiles: the JUnit file written with its attachments names, in
// the failed case's system-out, its failure screenshot and its trace as
// [[ATTACHMENT|path]] lines relative to the XML, and the files are there
// with their content; the passing case attaches nothing, and a case whose
// screenshot the retention removed attaches nothing either.
func TestJUnitFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.build(t)
	status := r.Cases[1]
	traceZip := []byte("PK-the-trace-of-b-status")
	if _, err := f.arts.SaveTrace(t.Context(), f.run.ID, status.ExecutionID, traceZip); err != nil {
		t.Fatal(err)
	}
	r = f.build(t) // now with its trace
	if tl := r.Cases[1].Trace; tl == nil || tl.Video != "/api/v1/runs/"+f.run.ID+"/cases/"+status.ExecutionID+"/trace/video" {
		t.Fatalf("the case's trace link: %+v", tl)
	}
	dir := filepath.Join(t.TempDir(), "ci", "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	xmlPath := filepath.Join(dir, "junit.xml")
	n, err := report.WriteJUnitFiles(t.Context(), r, report.ArtifactSource(f.arts, f.run.ID), report.JUnitFiles{Path: xmlPath})
	if err != nil || n != 2 {
		t.Fatalf("WriteJUnitFiles: %d files, %v; want 2", n, err)
	}
	data, err := os.ReadFile(xmlPath)
	if err != nil {
		t.Fatal(err)
	}
	atts := attachmentsOf(t, data)
	if len(atts) != 1 || len(atts[status.Title]) != 2 {
		t.Fatalf("attachments: got %v, want two of %q", atts, status.Title)
	}
	want := map[string][]byte{".png": f.shot, ".zip": traceZip}
	for _, p := range atts[status.Title] {
		if filepath.IsAbs(p) {
			t.Errorf("attachment %s: want a path relative to the XML", p)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatalf("attachment %s: %v", p, err)
		}
		if w := want[filepath.Ext(p)]; !bytes.Equal(got, w) {
			t.Errorf("attachment %s: %d bytes, want %d", p, len(got), len(w))
		}
	}

	// Relative to the project directory (GitLab) when told.
	project := filepath.Dir(filepath.Dir(dir))
	if _, err := report.WriteJUnitFiles(t.Context(), r, report.ArtifactSource(f.arts, f.run.ID), report.JUnitFiles{Path: xmlPath, RelativeTo: project}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(xmlPath)
	for _, p := range attachmentsOf(t, data)[status.Title] {
		if _, err := os.Stat(filepath.Join(project, filepath.FromSlash(p))); err != nil {
			t.Errorf("attachment relative to the project: %v", err)
		}
	}
}

// TestJUnitZip: the download bundles junit.xml with its attachments, at
// the paths the XML names; an attachment past the limit is named as not
// included.
func TestJUnitZip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.build(t)
	var b bytes.Buffer
	if err := report.WriteJUnitZip(t.Context(), r, report.ArtifactSource(f.arts, f.run.ID), &b, 0); err != nil {
		t.Fatal(err)
	}
	files := unzip(t, b.Bytes())
	atts := attachmentsOf(t, files["junit.xml"])
	paths := atts[r.Cases[1].Title]
	if len(paths) != 1 || !bytes.Equal(files[paths[0]], f.shot) {
		t.Fatalf("zip: attachments %v, files %d", atts, len(files))
	}
	b.Reset()
	if err := report.WriteJUnitZip(t.Context(), r, report.ArtifactSource(f.arts, f.run.ID), &b, 1); err != nil {
		t.Fatal(err)
	}
	if files := unzip(t, b.Bytes()); len(files) != 1 || !bytes.Contains(files["junit.xml"], []byte("not included: the attachments passed the limit")) {
		t.Errorf("an attachment past the limit is not said to be left out")
	}
}

func unzip(t *testing.T, data []byte) map[string][]byte {
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

// TestTraceWithoutReplay: a case whose trace holds no replay (a first
// attempt under on-failure) gets no video link, and the HTML report says
// why; with frames in it, the link is back.
func TestTraceWithoutReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	x := f.build(t).Cases[1]
	save := func(names ...string) *report.Report {
		t.Helper()
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, n := range names {
			if _, err := zw.Create(n); err != nil {
				t.Fatal(err)
			}
		}
		zw.Close()
		if _, err := f.arts.SaveTrace(t.Context(), f.run.ID, x.ExecutionID, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		return f.build(t)
	}
	r := save("trace.json", "dom/00.html")
	if tl := r.Cases[1].Trace; tl == nil || tl.Video != "" {
		t.Fatalf("a trace without a replay: %+v", tl)
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil || !bytes.Contains(page.Bytes(), []byte("no replay: a first attempt under on-failure")) || bytes.Contains(page.Bytes(), []byte("/trace/video")) {
		t.Errorf("the HTML report of a trace without a replay: %v", err)
	}
	r = save("trace.json", "frames/0000.jpg")
	if tl := r.Cases[1].Trace; tl == nil || tl.Video == "" {
		t.Fatalf("a trace with a replay: %+v", tl)
	}
}
