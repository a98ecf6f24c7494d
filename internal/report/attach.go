package report

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/duet-test/duet"
)

// JUnit attachments: a failed or errored case's screenshots and its trace
// written beside the JUnit file, and named in the case's system-out as
//
//	[[ATTACHMENT|junit-attachments/b-status-exec_123/step-02-failure.png]]
//
// one a line, the convention the Jenkins JUnit Attachments plugin, Azure
// DevOps and GitLab read. Paths are relative to the JUnit file's directory
// (Jenkins, Azure) unless JUnitFiles.RelativeTo names another (GitLab
// resolves them against the project directory: the same when the JUnit
// file is written there).

// Attachment is one file the JUnit testcase of a failed case attaches.
type Attachment struct {
	ExecutionID string
	// Path is where the file goes under the attachments directory, with
	// slashes: "KEY-EXECUTION/step-02-failure.png", "KEY-EXECUTION/trace.zip".
	Path string
	// ArtifactID is a screenshot's artifact; "" for the trace.
	ArtifactID string
	// Trace is set for the case's trace zip.
	Trace bool
	data  []byte // a screenshot already read by Build
}

// AttachmentSource returns the content of an attachment.
type AttachmentSource func(ctx context.Context, a Attachment) ([]byte, error)

// ArtifactSource reads attachments from arts, the store Build read the
// report from: screenshots by artifact id (those Build already read are
// not read again), traces with TraceReader.
func ArtifactSource(arts Artifacts, runID string) AttachmentSource {
	return func(ctx context.Context, a Attachment) ([]byte, error) {
		switch {
		case a.data != nil:
			return a.data, nil
		case arts == nil:
			return nil, duet.Errorf(duet.CodeNotFound, "this instance keeps no artifacts")
		case a.Trace:
			tr, ok := arts.(TraceReader)
			if !ok {
				return nil, duet.Errorf(duet.CodeNotFound, "this instance keeps no traces")
			}
			return tr.ReadTrace(ctx, runID, a.ExecutionID)
		}
		return arts.Read(ctx, a.ArtifactID)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// caseDir names the directory of a case's attachments: its key and
// execution id, reduced to characters every file system and CI tool takes.
func caseDir(c *Case) string {
	key := strings.Trim(unsafeName.ReplaceAllString(c.Key, "_"), "._")
	if len(key) > 60 {
		key = key[:60]
	}
	return key + "-" + unsafeName.ReplaceAllString(c.ExecutionID, "_")
}

// Attachments lists the files the JUnit report attaches: for each failed or
// errored case, the screenshots of its steps (those taken on failure and
// those a step saved: an assertScreenshot's expected, actual and diff) and
// its trace. Only the executor's report has any: what a run saw with a
// person's credentials is theirs (Disclosure).
func (r *Report) Attachments() []Attachment {
	if r.Disclosure != duet.DiscloseFull {
		return nil
	}
	var out []Attachment
	for _, c := range r.Cases {
		if c.Status != duet.StatusFailed && c.Status != duet.StatusError {
			continue
		}
		dir := caseDir(c)
		seen := map[string]bool{}
		var walk func(steps []*Step)
		walk = func(steps []*Step) {
			for _, s := range steps {
				for i, shot := range s.Screenshots {
					if shot.Unavailable != "" || seen[shot.ID] {
						continue
					}
					seen[shot.ID] = true
					what := "screenshot"
					if shot.OnFailure {
						what = "failure"
					}
					name := fmt.Sprintf("step-%02d-%s-%d%s", s.Index+1, what, i+1, extOf(shot.ContentType))
					out = append(out, Attachment{ExecutionID: c.ExecutionID, Path: dir + "/" + name, ArtifactID: shot.ID, data: shot.data})
				}
				walk(s.Children)
			}
		}
		walk(c.Steps)
		if c.Trace != nil {
			out = append(out, Attachment{ExecutionID: c.ExecutionID, Path: dir + "/trace.zip", Trace: true})
		}
	}
	return out
}

func extOf(contentType string) string {
	switch contentType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	}
	return ".bin"
}

// attachmentLines returns the system-out lines of each execution's
// attachments under prefix (slash-separated), and of those that could not
// be read.
func attachmentLines(atts []Attachment, prefix string, missing map[string]string) map[string]string {
	lines := map[string]string{}
	for _, a := range atts {
		var line string
		if why, ok := missing[a.Path]; ok {
			line = fmt.Sprintf("attachment %s not included: %s\n", a.Path, why)
		} else {
			line = "[[ATTACHMENT|" + path.Join(prefix, a.Path) + "]]\n"
		}
		lines[a.ExecutionID] += line
	}
	return lines
}

// WriteJUnitAttached writes the report as JUnit XML whose failed cases
// name their attachments (Attachments) under prefix, a path relative to
// where the CI tool resolves them or an absolute one; missing maps an
// attachment's Path to why it is not included (said in its place).
func (r *Report) WriteJUnitAttached(w io.Writer, atts []Attachment, prefix string, missing map[string]string) error {
	x := r.JUnitXML()
	lines := attachmentLines(atts, prefix, missing)
	if len(lines) > 0 {
		for i, c := range r.Cases {
			if l := lines[c.ExecutionID]; l != "" {
				jc := &x.Suites[0].Cases[i]
				if jc.SystemOut != "" && !strings.HasSuffix(jc.SystemOut, "\n") {
					jc.SystemOut += "\n"
				}
				jc.SystemOut += l
			}
		}
	}
	return encodeJUnit(w, x)
}

// JUnitFiles says where WriteJUnitFiles writes.
type JUnitFiles struct {
	// Path is the JUnit file.
	Path string
	// Dir is the attachments' directory; "" means beside Path, named after
	// it: out/junit.xml → out/junit-attachments.
	Dir string
	// RelativeTo is the directory the attachment paths in the XML are
	// relative to; "" means Path's directory (Jenkins, Azure DevOps).
	// GitLab resolves them against the project directory.
	RelativeTo string
}

// AttachmentsDir returns the attachments' directory of the JUnit file p.
func (f JUnitFiles) AttachmentsDir() string {
	if f.Dir != "" {
		return f.Dir
	}
	return strings.TrimSuffix(f.Path, filepath.Ext(f.Path)) + "-attachments"
}

// WriteJUnitFiles writes the JUnit report to f.Path (through a temporary
// file: a reader never sees half of it) and the attachments of its failed
// cases into f.AttachmentsDir(), read from src. An attachment that cannot
// be read (removed by the retention) is named in system-out with the
// reason instead of failing the report. It returns how many files it
// attached.
func WriteJUnitFiles(ctx context.Context, r *Report, src AttachmentSource, f JUnitFiles) (int, error) {
	atts := r.Attachments()
	dir := f.AttachmentsDir()
	missing := map[string]string{}
	n := 0
	for _, a := range atts {
		data, err := src(ctx, a)
		if err != nil {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			missing[a.Path] = duet.ErrorMessage(err)
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(a.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return n, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return n, err
		}
		n++
	}
	base := f.RelativeTo
	if base == "" {
		base = filepath.Dir(f.Path)
	}
	prefix, err := filepath.Rel(absOr(base), absOr(dir))
	if err != nil {
		prefix = absOr(dir)
	}
	var b bytes.Buffer
	if err := r.WriteJUnitAttached(&b, atts, filepath.ToSlash(prefix), missing); err != nil {
		return n, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".*")
	if err != nil {
		return n, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	return n, err
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// WriteJUnitZip writes the JUnit report and its attachments as one zip, to
// download and unpack where the CI tool reads it: junit.xml, and the
// attachments under junit-attachments/ (the paths the XML names, relative
// to it). An attachment that cannot be read is named in system-out with
// the reason. limit bounds the attachments' bytes (0: none); past it, the
// rest are named as not included.
func WriteJUnitZip(ctx context.Context, r *Report, src AttachmentSource, w io.Writer, limit int) error {
	atts := r.Attachments()
	missing := map[string]string{}
	zw := zip.NewWriter(w)
	total := 0
	for _, a := range atts {
		data, err := src(ctx, a)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			missing[a.Path] = duet.ErrorMessage(err)
			continue
		}
		if limit > 0 && total+len(data) > limit {
			missing[a.Path] = fmt.Sprintf("the attachments passed the limit of %d bytes of one download; get it with `duet report --trace` or from the console", limit)
			continue
		}
		total += len(data)
		fw, err := zw.Create("junit-attachments/" + a.Path)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	fw, err := zw.Create("junit.xml")
	if err != nil {
		return err
	}
	if err := r.WriteJUnitAttached(fw, atts, "junit-attachments", missing); err != nil {
		return err
	}
	return zw.Close()
}
