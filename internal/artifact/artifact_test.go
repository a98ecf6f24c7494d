package artifact_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/engine"
)

var _ engine.Artifacts = (*artifact.Store)(nil)

// png is the start of a PNG file: enough for content sniffing.
var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01")

func TestSaveRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := artifact.New(filepath.Join(t.TempDir(), "artifacts"), time.Hour)
	tests := []struct {
		name     string
		data     []byte
		stepName string
		wantID   string
		wantType string
	}{
		{"png", png, "failure", "run_1/exec_1-03-failure.png", "image/png"},
		{"jpeg", []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), "Order page (after)", "run_1/exec_1-03-order-page-after.jpg", "image/jpeg"},
		{"empty name", png, "  ", "run_1/exec_1-03-artifact.png", "image/png"},
		{"text", []byte("hello"), "log", "run_1/exec_1-03-log.txt", "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := s.Save(ctx, "run_1", "exec_1", 3, tt.stepName, tt.data)
			if err != nil {
				t.Fatalf("Save: got error %v, want nil", err)
			}
			if id != tt.wantID {
				t.Errorf("Save: got id %q, want %q", id, tt.wantID)
			}
			got, err := s.Read(ctx, id)
			if err != nil || !bytes.Equal(got, tt.data) {
				t.Fatalf("Read(%s): got %q, %v; want the saved bytes", id, got, err)
			}
			if ct := artifact.ContentType(got); ct != tt.wantType {
				t.Errorf("ContentType: got %q, want %q", ct, tt.wantType)
			}
		})
	}
}

func TestSaveReplaces(t *testing.T) {
	t.Parallel()
	s := artifact.New(t.TempDir(), 0)
	id1, _ := s.Save(t.Context(), "run_1", "exec_1", 0, "shot", png)
	id2, err := s.Save(t.Context(), "run_1", "exec_1", 0, "shot", append(bytes.Clone(png), 'x'))
	if err != nil || id1 != id2 {
		t.Fatalf("second Save: got %q, %v; want the id %q again", id2, err, id1)
	}
	if got, _ := s.Read(t.Context(), id1); len(got) != len(png)+1 {
		t.Errorf("Read: got %d bytes, want the second content (%d)", len(got), len(png)+1)
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), "run_1"))
	if len(entries) != 1 {
		t.Errorf("run directory: got %d entries, want 1 (no temporary files left)", len(entries))
	}
}

func TestBadIDs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := artifact.New(filepath.Join(root, "artifacts"), 0)
	// A file outside the store that a traversal would reach.
	os.WriteFile(filepath.Join(root, "secret.png"), png, 0o600)
	for _, id := range []string{"", "run_1", "../secret.png", "run_1/../../secret.png", "run_1/..", "/etc/passwd", "run_1/a/b.png", "run 1/x.png", "run_1/.tmp-123", `run_1\..\x`} {
		t.Run(fmt.Sprintf("read %q", id), func(t *testing.T) {
			_, err := s.Read(t.Context(), id)
			if got := duet.ErrorCode(err); got != duet.CodeInvalidArgument {
				t.Errorf("Read(%q): got %v (code %q), want INVALID_ARGUMENT", id, err, got)
			}
		})
	}
	for _, owner := range [][2]string{{"../x", "exec_1"}, {"run_1", "a/b"}, {"", "exec_1"}, {"run_1", ".."}} {
		t.Run(fmt.Sprintf("save %q", owner), func(t *testing.T) {
			_, err := s.Save(t.Context(), owner[0], owner[1], 0, "x", png)
			if got := duet.ErrorCode(err); got != duet.CodeInvalidArgument {
				t.Errorf("Save(%q): got %v (code %q), want INVALID_ARGUMENT", owner, err, got)
			}
		})
	}
	if _, err := s.Read(t.Context(), "run_1/exec_1-00-x.png"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("Read of a missing artifact: got %v, want NOT_FOUND", err)
	}
}

func TestSaveCancelled(t *testing.T) {
	t.Parallel()
	s := artifact.New(t.TempDir(), 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Save(ctx, "run_1", "exec_1", 0, "x", png); duet.ErrorCode(err) != duet.CodeCancelled {
		t.Errorf("Save with a cancelled ctx: got %v, want CANCELLED", err)
	}
}

func TestCleanup(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Now()
	tests := []struct {
		name      string
		retention time.Duration
		age       map[string]time.Duration // run -> age of its newest artifact
		wantGone  []string
	}{
		{"forever", 0, map[string]time.Duration{"run_old": 1000 * time.Hour}, nil},
		{"expired and fresh", 24 * time.Hour,
			map[string]time.Duration{"run_old": 25 * time.Hour, "run_new": time.Hour, "run_edge": 23 * time.Hour},
			[]string{"run_old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := artifact.New(t.TempDir(), tt.retention)
			ids := map[string]string{}
			for run, age := range tt.age {
				id, err := s.Save(ctx, run, "exec_1", 0, "shot", png)
				if err != nil {
					t.Fatal(err)
				}
				ids[run] = id
				when := now.Add(-age)
				os.Chtimes(filepath.Join(s.Dir(), id), when, when)
				os.Chtimes(filepath.Join(s.Dir(), run), when, when)
			}
			// Stray files beside the run directories are left alone.
			os.WriteFile(filepath.Join(s.Dir(), "README"), []byte("x"), 0o600)
			n, err := s.Cleanup(ctx, now)
			if err != nil {
				t.Fatalf("Cleanup: got error %v", err)
			}
			if n != len(tt.wantGone) {
				t.Errorf("Cleanup: removed %d runs, want %d", n, len(tt.wantGone))
			}
			for run, id := range ids {
				_, err := s.Read(ctx, id)
				gone := duet.ErrorCode(err) == duet.CodeNotFound
				want := strings.Contains(strings.Join(tt.wantGone, ","), run)
				if gone != want {
					t.Errorf("%s: got removed=%v, want %v (err %v)", run, gone, want, err)
				}
			}
			if _, err := os.Stat(filepath.Join(s.Dir(), "README")); err != nil {
				t.Errorf("stray file: got %v, want it kept", err)
			}
		})
	}
}

func TestCleanupMissingDir(t *testing.T) {
	t.Parallel()
	s := artifact.New(filepath.Join(t.TempDir(), "never-created"), time.Hour)
	if n, err := s.Cleanup(t.Context(), time.Now()); n != 0 || err != nil {
		t.Errorf("Cleanup of a missing directory: got %d, %v; want 0, nil", n, err)
	}
}

func TestConcurrentSaves(t *testing.T) {
	t.Parallel()
	s := artifact.New(t.TempDir(), time.Hour)
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Go(func() {
			id, err := s.Save(t.Context(), "run_1", fmt.Sprintf("exec_%d", i%4), i, "shot", png)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if _, err := s.Read(t.Context(), id); err != nil {
			t.Errorf("Read(%s): %v", id, err)
		}
	}
}

// TestNoReplay: a trace zip without screencast frames is known to hold no
// replay; one with frames, one that is not a zip and a missing one are not.
func TestNoReplay(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := artifact.New(filepath.Join(t.TempDir(), "artifacts"), time.Hour)
	zipOf := func(names ...string) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, n := range names {
			w, err := zw.Create(n)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("x"))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, c := range []struct {
		exec string
		data []byte
		want bool
	}{
		{"exec_none", zipOf("trace.json", "index.html", "dom/00.html", "shots/03-failure.png"), true},
		{"exec_frames", zipOf("trace.json", "frames/0000.jpg"), false},
		{"exec_junk", []byte("not a zip"), false},
	} {
		if _, err := s.SaveTrace(ctx, "run_1", c.exec, c.data); err != nil {
			t.Fatal(err)
		}
		if got := s.NoReplay(ctx, "run_1", c.exec); got != c.want {
			t.Errorf("%s: NoReplay %v, want %v", c.exec, got, c.want)
		}
	}
	if s.NoReplay(ctx, "run_1", "exec_missing") {
		t.Error("a missing trace is known to hold no replay")
	}
}
