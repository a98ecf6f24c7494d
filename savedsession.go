package duet

import (
	"context"
	"time"
)

// SavedSession is the browser state (cookies and localStorage) a case of a
// run saved after signing in (a saveSession step), for the run's later
// cases to start from (session: NAME). It is the executor's, as secret as
// their password: only its ciphertext is stored (AES-256-GCM under the
// master key, bound to the run, the owner and the name), it is kept for
// the run only — no other run, of its owner or anyone, can name it — and
// it expires (SavedSessionTTL) even when the run never ends.
type SavedSession struct {
	RunID      string    `json:"runId"`
	Name       string    `json:"name"`
	Owner      string    `json:"owner"` // the run's executor
	Ciphertext []byte    `json:"-"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// SavedSessionTTL is how long a saved session lives: beyond the longest
// run's cases, and short enough that a forgotten one is gone the next day.
const SavedSessionTTL = 12 * time.Hour

// SavedSessionStore keeps the sessions runs save, sealed.
type SavedSessionStore interface {
	// SaveSavedSession creates or replaces the session s.Name of run
	// s.RunID, and deletes the sessions of every run that have expired.
	// Returns INVALID_ARGUMENT.
	SaveSavedSession(ctx context.Context, s *SavedSession) error
	// FindSavedSession returns the session name of run runID. Returns
	// NOT_FOUND when there is none, or it has expired.
	FindSavedSession(ctx context.Context, runID, name string) (*SavedSession, error)
}

// ValidSessionName checks the name of a saved session: letters, digits and
// _, not starting with a digit, at most 64. Returns INVALID_ARGUMENT.
func ValidSessionName(name string) error {
	if !secretNameRe().MatchString(name) {
		return Errorf(CodeInvalidArgument, "session name %q: use letters, digits and _ (not starting with a digit), at most 64", name)
	}
	return nil
}

// Valid checks s before it is stored. Returns INVALID_ARGUMENT.
func (s *SavedSession) Valid() error {
	switch {
	case s.RunID == "":
		return Errorf(CodeInvalidArgument, "a saved session needs its run")
	case len(s.Ciphertext) == 0:
		return Errorf(CodeInvalidArgument, "saved session %s has no ciphertext", s.Name)
	case s.ExpiresAt.IsZero():
		return Errorf(CodeInvalidArgument, "saved session %s has no expiry", s.Name)
	}
	if err := ValidUserID(s.Owner); err != nil {
		return err
	}
	return ValidSessionName(s.Name)
}
