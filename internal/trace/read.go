package trace

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/duet-test/duet"
)

// Archive is a trace read back from its zip.
type Archive struct {
	Trace *Trace
	files map[string]*zip.File
}

// Open reads a trace zip. Returns INVALID_ARGUMENT when data is not one.
func Open(data []byte) (*Archive, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, duet.WrapError(duet.CodeInvalidArgument, err, "not a trace: %v", err)
	}
	a := &Archive{files: map[string]*zip.File{}}
	for _, f := range zr.File {
		a.files[f.Name] = f
	}
	doc, err := a.read("trace.json", 64<<20)
	if err != nil {
		return nil, duet.WrapError(duet.CodeInvalidArgument, err, "not a trace: no trace.json")
	}
	a.Trace = &Trace{}
	if err := json.Unmarshal(doc, a.Trace); err != nil {
		return nil, duet.WrapError(duet.CodeInvalidArgument, err, "not a trace: trace.json: %v", err)
	}
	return a, nil
}

// File returns the content of the file name of the trace ("" is
// index.html) and its media type. Returns NOT_FOUND.
func (a *Archive) File(name string) ([]byte, string, error) {
	if name == "" {
		name = "index.html"
	}
	if path.Clean(name) != name || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
		return nil, "", duet.Errorf(duet.CodeNotFound, "no file %q in the trace", name)
	}
	data, err := a.read(name, 256<<20)
	if err != nil {
		return nil, "", err
	}
	return data, MediaType(name), nil
}

func (a *Archive) read(name string, limit int64) ([]byte, error) {
	f := a.files[name]
	if f == nil {
		return nil, duet.Errorf(duet.CodeNotFound, "no file %q in the trace", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("trace: opening %s: %w", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("trace: reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, duet.Errorf(duet.CodeTooLarge, "%s in the trace is over %d bytes", name, limit)
	}
	return data, nil
}

// MediaType returns the media type of a trace file by its name.
func MediaType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json":
		return "application/json"
	case ".har":
		return "application/json"
	case ".png":
		return "image/png"
	case ".jpg":
		return "image/jpeg"
	}
	return "application/octet-stream"
}

// IsSnapshot reports whether name is a DOM snapshot of a trace: a page the
// site under test made, to be served only sandboxed (SnapshotCSP).
func IsSnapshot(name string) bool { return strings.HasPrefix(name, "dom/") }

// SnapshotCSP is the Content-Security-Policy a DOM snapshot is served
// under: a sandbox (a unique origin, no script, no form, no popup) that
// loads nothing from anywhere but its own inline styles and data: images.
const SnapshotCSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; form-action 'none'"
