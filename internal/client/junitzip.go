package client

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/report"
)

// Bounds of a JUnit zip from a server: its entries and the bytes they
// unpack to (not the sizes its headers claim, the bytes read).
const (
	maxZipEntries  = 10000
	maxZipUnpacked = maxAnswer
)

// JUnitFiles implements Client: the server's JUnit zip
// (GET /runs/{runId}/report?format=junit&attachments=zip), unpacked beside
// path: junit.xml becomes path, junit-attachments/… the attachments.
func (r *Remote) JUnitFiles(ctx context.Context, runID, path string) (api.JUnitWritten, error) {
	resp, err := r.send(ctx, request{method: http.MethodGet, path: "/runs/" + p(runID) + "/report",
		query: values("format", "junit", "attachments", "zip")})
	if err != nil {
		return api.JUnitWritten{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return api.JUnitWritten{}, duet.WrapError(duet.CodeUnavailable, err, "reading the JUnit zip from %s", r.base)
	}
	if len(data) > maxAnswer {
		return api.JUnitWritten{}, duet.Errorf(duet.CodeTooLarge, "the JUnit zip from %s is over %d bytes", r.base, maxAnswer)
	}
	var out api.JUnitWritten
	if n, _ := strconv.Atoi(resp.Header.Get("Duet-Report-Not-Shown")); n > 0 {
		out.Window = &report.Window{NotShown: n, NextCursor: resp.Header.Get("Duet-Report-Next-Cursor")}
	}
	out.Attached, err = unpackJUnitZip(data, path)
	return out, err
}

// unpackJUnitZip writes a JUnit zip's junit.xml to path (through a
// temporary file) and its junit-attachments/ entries into
// JUnitAttachmentsDir beside path. Every entry is checked before anything
// is written: a name outside junit-attachments/ (absolute, with .., a
// backslash) or another entry is refused, and so is a zip of more than
// maxZipEntries entries or maxZipUnpacked bytes unpacked; the writes go
// through an os.Root of the directory, which no symbolic link leaves. It
// returns how many attachments it wrote. A bad zip is INTERNAL (the
// server's); an error writing is the file system's.
func unpackJUnitZip(data []byte, path string) (int, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, duet.WrapError(duet.CodeInternal, err, "the server's JUnit zip cannot be read")
	}
	if len(zr.File) > maxZipEntries {
		return 0, duet.Errorf(duet.CodeTooLarge, "the server's JUnit zip has %d entries, over %d", len(zr.File), maxZipEntries)
	}
	var xml *zip.File
	var atts []*zip.File
	for _, f := range zr.File {
		if f.Name == "junit.xml" {
			if xml != nil {
				return 0, duet.Errorf(duet.CodeInternal, "the server's JUnit zip has junit.xml twice")
			}
			xml = f
			continue
		}
		if strings.HasSuffix(f.Name, "/") && f.FileInfo().IsDir() {
			continue
		}
		rel, ok := strings.CutPrefix(f.Name, JUnitAttachmentsDir+"/")
		if !ok || strings.Contains(rel, `\`) || !filepath.IsLocal(filepath.FromSlash(rel)) || !f.Mode().IsRegular() {
			return 0, duet.Errorf(duet.CodeInternal, "the server's JUnit zip has an entry %.200q outside %s/: nothing written", f.Name, JUnitAttachmentsDir)
		}
		atts = append(atts, f)
	}
	if xml == nil {
		return 0, duet.Errorf(duet.CodeInternal, "the server's JUnit zip has no junit.xml")
	}
	budget := int64(maxZipUnpacked)
	read := func(f *zip.File) ([]byte, error) {
		rc, err := f.Open()
		if err != nil {
			return nil, duet.WrapError(duet.CodeInternal, err, "the server's JUnit zip: %.200q", f.Name)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, budget+1))
		if err != nil {
			return nil, duet.WrapError(duet.CodeInternal, err, "the server's JUnit zip: %.200q", f.Name)
		}
		if budget -= int64(len(b)); budget < 0 {
			return nil, duet.Errorf(duet.CodeTooLarge, "the server's JUnit zip unpacks to more than %d bytes", maxZipUnpacked)
		}
		return b, nil
	}
	xmlData, err := read(xml)
	if err != nil {
		return 0, err
	}
	n := 0
	if len(atts) > 0 {
		dir := filepath.Join(filepath.Dir(path), JUnitAttachmentsDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, err
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return 0, err
		}
		defer root.Close()
		for _, f := range atts {
			b, err := read(f)
			if err != nil {
				return n, err
			}
			rel := filepath.FromSlash(strings.TrimPrefix(f.Name, JUnitAttachmentsDir+"/"))
			if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
				return n, err
			}
			if err := root.WriteFile(rel, b, 0o644); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, writeAtomic(path, xmlData)
}

// writeAtomic writes data to path through a temporary file beside it: a
// reader never sees half of it.
func writeAtomic(path string, data []byte) error {
	if err := WriteFileAtomic(path, func(w *bufio.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteFileAtomic writes path (mode 0644) through a temporary file in its
// directory, renamed over path once write has returned and the file is
// flushed and closed: a reader never sees half of it, and a failed write
// leaves path as it was.
func WriteFileAtomic(path string, write func(*bufio.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}
