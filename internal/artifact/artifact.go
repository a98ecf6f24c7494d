// Package artifact keeps the files that runs produce, such as screenshots, in
// a directory (DUET_HOME/artifacts), one subdirectory per run. A retention
// period bounds how long they stay: Cleanup removes the directories of runs
// whose last artifact is older than that.
//
// An artifact id names its file: "<runID>/<file>", for example
// "run_01j…/exec_01j…-03-failure.png". Ids are stored in step results
// (duet.StepResult.Artifacts) and resolved by Read.
package artifact

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// Store keeps artifacts under one directory. It is safe for concurrent use.
type Store struct {
	dir       string
	retention time.Duration
}

// New returns a store over dir, which is created on the first Save.
// retention is how long a run's artifacts are kept after its last one was
// saved; zero or less keeps them forever.
func New(dir string, retention time.Duration) *Store {
	return &Store{dir: dir, retention: retention}
}

// Dir returns the directory of the store.
func (s *Store) Dir() string { return s.dir }

// Retention returns how long artifacts are kept; 0 means forever.
func (s *Store) Retention() time.Duration { return max(s.retention, 0) }

// idPart is what a run id or an execution id may contain.
var idPart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`) })

// fileName is what the file part of an id may contain.
var fileName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$`) })

// Save stores data as an artifact of step stepIndex of an execution and
// returns its id. name (such as "failure" or the step's name) becomes part
// of the file name; the extension comes from the content (.png, .jpg, ...).
// Saving again under the same run, execution, step and name replaces the
// file (a resumed execution runs its steps again).
//
// Errors: INVALID_ARGUMENT for a malformed run or execution id, INTERNAL when
// the file cannot be written.
func (s *Store) Save(ctx context.Context, runID, executionID string, stepIndex int, name string, data []byte) (string, error) {
	if !idPart().MatchString(runID) || !idPart().MatchString(executionID) || stepIndex < 0 {
		return "", duet.Errorf(duet.CodeInvalidArgument, "invalid artifact owner %q/%q/%d", runID, executionID, stepIndex)
	}
	if err := ctx.Err(); err != nil {
		return "", duet.WrapError(duet.CodeCancelled, err, "saving an artifact: cancelled")
	}
	file := fmt.Sprintf("%s-%02d-%s%s", executionID, stepIndex, slug(name), extension(data))
	dir := filepath.Join(s.dir, runID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", &duet.Error{Code: duet.CodeInternal, Message: "cannot store the artifact", Op: "artifact.Save", Err: err}
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", &duet.Error{Code: duet.CodeInternal, Message: "cannot store the artifact", Op: "artifact.Save", Err: err}
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, file))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", &duet.Error{Code: duet.CodeInternal, Message: "cannot store the artifact", Op: "artifact.Save", Err: err}
	}
	return runID + "/" + file, nil
}

// Read returns the content of the artifact id.
//
// Errors: INVALID_ARGUMENT for a malformed id, NOT_FOUND when there is no
// such artifact (never saved, or removed by the retention), INTERNAL.
func (s *Store) Read(ctx context.Context, id string) ([]byte, error) {
	path, err := s.path(id)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, duet.Errorf(duet.CodeNotFound, "artifact %s not found (artifacts are kept for %s)", id, s.describeRetention())
	}
	if err != nil {
		return nil, &duet.Error{Code: duet.CodeInternal, Message: "cannot read the artifact", Op: "artifact.Read", Err: err}
	}
	return data, nil
}

// path resolves an id to its file, refusing anything outside the store.
func (s *Store) path(id string) (string, error) {
	run, file, ok := strings.Cut(id, "/")
	if !ok || !idPart().MatchString(run) || !fileName().MatchString(file) || strings.Contains(file, "..") {
		return "", duet.Errorf(duet.CodeInvalidArgument, "invalid artifact id %q", id)
	}
	return filepath.Join(s.dir, run, file), nil
}

func (s *Store) describeRetention() string {
	switch r := s.retention; {
	case r <= 0:
		return "ever"
	case r == 24*time.Hour:
		return "1 day"
	case r%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", r/(24*time.Hour))
	default:
		return r.String()
	}
}

// ContentType returns the media type of an artifact's content, such as
// "image/png".
func ContentType(data []byte) string {
	return http.DetectContentType(data)
}

// extension returns the file extension that suits data.
func extension(data []byte) string {
	switch ct := http.DetectContentType(data); {
	case ct == "image/png":
		return ".png"
	case ct == "image/jpeg":
		return ".jpg"
	case ct == "image/webp":
		return ".webp"
	case strings.HasPrefix(ct, "text/html"):
		return ".html"
	case strings.HasPrefix(ct, "text/"):
		return ".txt"
	}
	return ".bin"
}

// slug turns a name into a short file-name part.
func slug(name string) string {
	s := duet.Slug(name, 40)
	if s == "" {
		return "artifact"
	}
	return s
}

// Cleanup removes the artifacts of every run whose newest artifact was saved
// before now minus the retention, and returns how many runs it cleared. It
// does nothing when the retention is zero. A run directory that cannot be
// removed is skipped and reported in the error; the others are still
// removed.
func (s *Store) Cleanup(ctx context.Context, now time.Time) (int, error) {
	n, _, err := s.Collect(ctx, now, false)
	return n, err
}

// Collect is Cleanup that also says how many bytes the removed runs' files
// held; with dryRun it removes nothing and says what it would remove.
func (s *Store) Collect(ctx context.Context, now time.Time, dryRun bool) (runs int, bytes int64, err error) {
	if s.retention <= 0 {
		return 0, 0, nil
	}
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("artifact cleanup: %w", err)
	}
	cutoff := now.Add(-s.retention)
	var errs []error
	for _, e := range entries {
		if ctx.Err() != nil {
			break
		}
		if !e.IsDir() || !idPart().MatchString(e.Name()) {
			continue
		}
		dir := filepath.Join(s.dir, e.Name())
		newest, size, err := newestModTime(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if newest.After(cutoff) {
			continue
		}
		if !dryRun {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		runs++
		bytes += size
	}
	if len(errs) > 0 {
		return runs, bytes, fmt.Errorf("artifact cleanup: %w", errors.Join(errs...))
	}
	return runs, bytes, nil
}

// newestModTime returns the latest modification time of dir and its files,
// and the size of its files.
func newestModTime(dir string) (time.Time, int64, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return time.Time{}, 0, err
	}
	newest := info.ModTime()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return time.Time{}, 0, err
	}
	var size int64
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		size += fi.Size()
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	return newest, size, nil
}
