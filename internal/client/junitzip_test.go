package client

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
)

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestUnpackJUnitZip: a server's JUnit zip unpacks beside the JUnit file;
// an entry that would land anywhere else — a .. path, an absolute one, a
// backslash, another name, through a symbolic link already there — is
// refused and nothing is written.
func TestUnpackJUnitZip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.xml")
	n, err := unpackJUnitZip(zipOf(t, map[string]string{"junit.xml": "<testsuites/>", "junit-attachments/c-exec_1/trace.zip": "TRACE"}), path)
	if b, _ := os.ReadFile(filepath.Join(dir, "junit-attachments", "c-exec_1", "trace.zip")); err != nil || n != 1 || string(b) != "TRACE" {
		t.Fatalf("a good zip: %d %v %q", n, err, b)
	}
	if b, _ := os.ReadFile(path); string(b) != "<testsuites/>" {
		t.Fatalf("the XML: %q", b)
	}
	for _, name := range []string{"junit-attachments/../../evil", "/etc/evil", "junit-attachments/a\\..\\..\\evil", "evil.txt", "junit-attachments/../junit.xml"} {
		dir := t.TempDir()
		_, err := unpackJUnitZip(zipOf(t, map[string]string{"junit.xml": "<x/>", name: "EVIL"}), filepath.Join(dir, "j.xml"))
		if duet.ErrorCode(err) != duet.CodeInternal || !strings.Contains(err.Error(), "outside junit-attachments/") {
			t.Errorf("%q: %v, want INTERNAL naming the entry", name, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%q: wrote %v", name, entries)
		}
	}
	// A symbolic link in the attachments' directory leads nowhere outside.
	dir = t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "junit-attachments"), 0o755)
	os.Symlink(outside, filepath.Join(dir, "junit-attachments", "c-exec_1"))
	_, err = unpackJUnitZip(zipOf(t, map[string]string{"junit.xml": "<x/>", "junit-attachments/c-exec_1/trace.zip": "EVIL"}), filepath.Join(dir, "j.xml"))
	if _, serr := os.Stat(filepath.Join(outside, "trace.zip")); err == nil || !errors.Is(serr, fs.ErrNotExist) {
		t.Errorf("through a symbolic link: %v; outside: %v", err, serr)
	}
	if _, err := unpackJUnitZip([]byte("not a zip"), filepath.Join(t.TempDir(), "j.xml")); duet.ErrorCode(err) != duet.CodeInternal {
		t.Errorf("not a zip: %v", err)
	}
}
