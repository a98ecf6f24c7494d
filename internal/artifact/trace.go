package artifact

import (
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/duet-test/duet"
)

// TraceID returns the artifact id of the trace of an execution:
// "<runID>/<executionID>-trace.zip".
func TraceID(runID, executionID string) string {
	return runID + "/" + executionID + "-trace.zip"
}

// SaveTrace stores the trace zip of an execution (package trace) beside
// the run's other artifacts and returns its id, TraceID. Saving again
// replaces it (a resumed execution runs again). The retention and Cleanup
// treat it as any artifact of the run.
//
// Errors: INVALID_ARGUMENT for a malformed id, CANCELLED, INTERNAL.
func (s *Store) SaveTrace(ctx context.Context, runID, executionID string, data []byte) (string, error) {
	if !idPart().MatchString(runID) || !idPart().MatchString(executionID) {
		return "", duet.Errorf(duet.CodeInvalidArgument, "invalid trace owner %q/%q", runID, executionID)
	}
	if err := ctx.Err(); err != nil {
		return "", duet.WrapError(duet.CodeCancelled, err, "saving a trace: cancelled")
	}
	dir := filepath.Join(s.dir, runID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", &duet.Error{Code: duet.CodeInternal, Message: "cannot store the trace", Op: "artifact.SaveTrace", Err: err}
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", &duet.Error{Code: duet.CodeInternal, Message: "cannot store the trace", Op: "artifact.SaveTrace", Err: err}
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	id := TraceID(runID, executionID)
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, executionID+"-trace.zip"))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", &duet.Error{Code: duet.CodeInternal, Message: "cannot store the trace", Op: "artifact.SaveTrace", Err: err}
	}
	return id, nil
}

// HasTrace reports whether an execution has a trace, and its size.
func (s *Store) HasTrace(ctx context.Context, runID, executionID string) (int64, bool) {
	path, err := s.path(TraceID(runID, executionID))
	if err != nil {
		return 0, false
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return fi.Size(), true
}

// NoReplay reports that the trace of an execution is known to hold no
// replay (no screencast frame: a first attempt under on-failure records
// none, trace.Replay), so that no page offers its video. It reads only the
// zip's directory; a trace it cannot read is not known to lack one.
func (s *Store) NoReplay(ctx context.Context, runID, executionID string) bool {
	path, err := s.path(TraceID(runID, executionID))
	if err != nil {
		return false
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return false
	}
	defer zr.Close()
	for _, f := range zr.File {
		if strings.HasPrefix(f.Name, "frames/") {
			return false
		}
	}
	return true
}

// ReadTrace returns the trace zip of an execution.
//
// Errors: INVALID_ARGUMENT for a malformed id, NOT_FOUND when the case kept
// no trace (its mode, or it passed under on-failure) or the retention
// removed it, INTERNAL.
func (s *Store) ReadTrace(ctx context.Context, runID, executionID string) ([]byte, error) {
	data, err := s.Read(ctx, TraceID(runID, executionID))
	if duet.ErrorCode(err) == duet.CodeNotFound {
		return nil, duet.Errorf(duet.CodeNotFound, "execution %s of run %s has no trace: its case kept none (trace mode, or it passed under on-failure), or it is older than the retention (%s)",
			executionID, runID, s.describeRetention())
	}
	return data, err
}
