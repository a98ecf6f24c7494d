package storerules

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// EncodeAIPlan checks that the plan p of the run of lease l may be stored
// (checkAIPlan) and returns its actions as stored.
func EncodeAIPlan(l duet.Lease, p *duet.AIPlan) (actions string, err error) {
	if err := checkAIPlan(l, p); err != nil {
		return "", err
	}
	b, err := json.Marshal(p.Actions)
	if err != nil {
		return "", duet.WrapError(duet.CodeInvalidArgument, err, "an AI plan's actions: %v", err)
	}
	return string(b), nil
}

// checkAIPlan is what a plan must hold to be stored.
func checkAIPlan(l duet.Lease, p *duet.AIPlan) error {
	switch {
	case p == nil || p.TaskID == "" || p.CaseID == "" || p.StepHash == "" || p.ExecutionID == "" || len(p.Actions) == 0:
		return duet.Errorf(duet.CodeInvalidArgument, "an AI plan needs a task, a case, a step, an execution and actions")
	case len(p.Actions) > duet.MaxAIPlanActions:
		return duet.Errorf(duet.CodeInvalidArgument, "an AI plan holds at most %d actions, this one %d", duet.MaxAIPlanActions, len(p.Actions))
	case p.RunID != l.RunID:
		return duet.LeaseLost(l)
	}
	for _, a := range p.Actions {
		if a.Locator == nil || a.Do == "" {
			return duet.Errorf(duet.CodeInvalidArgument, "an AI plan's action needs what it does and a locator")
		}
	}
	return nil
}

// PostRunApprovable checks that hash is the current version of t's
// post-run actions.
func PostRunApprovable(t *duet.Task, hash string) error {
	cur := duet.PostRunHash(t.PostRun)
	switch {
	case cur == "":
		return duet.Errorf(duet.CodeInvalidArgument, "task %s has no post-run actions", t.ID)
	case hash != cur:
		return duet.Errorf(duet.CodeConflict, "the post-run actions of task %s changed: review them again before approving", t.ID)
	}
	return nil
}

func CheckMCPServer(s *duet.MCPServer, cred *duet.Credential) error {
	switch {
	case s.Owner == "" || s.Name == "" || s.URL == "" || s.ServerKey == "":
		return duet.Errorf(duet.CodeInvalidArgument, "an MCP server registration needs an owner, a name, a URL and a serverKey")
	case cred == nil && s.CredentialRef != "":
		return duet.Errorf(duet.CodeInvalidArgument, "credentialRef %q without a credential", s.CredentialRef)
	case cred != nil && (cred.Ref == "" || cred.Ref != s.CredentialRef || cred.Owner != s.Owner || cred.ServerKey != s.ServerKey || len(cred.Ciphertext) == 0):
		return duet.Errorf(duet.CodeInvalidArgument, "the credential does not match the registration")
	}
	return nil
}

func InvalidOAuthToken() error {
	return duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
}

func ValidSchedule(s *duet.Schedule) error {
	switch {
	case s.TaskID == "" || s.Owner == "":
		return duet.Errorf(duet.CodeInvalidArgument, "a schedule needs a task and an owner")
	case strings.TrimSpace(s.Name) == "":
		return duet.Errorf(duet.CodeInvalidArgument, "a schedule needs a name")
	case (s.Cron == "") == (s.Every <= 0):
		return duet.Errorf(duet.CodeInvalidArgument, "a schedule has a cron expression or an interval (every), exactly one")
	case s.NextFireAt.IsZero():
		return duet.Errorf(duet.CodeInvalidArgument, "a schedule needs its next fire time")
	}
	return duet.ValidUserID(s.Owner)
}

// Decidable checks that by may decide s now.
func Decidable(s *duet.StopRequest, by string) error {
	switch {
	case s.Executor != by:
		return duet.Errorf(duet.CodePermissionDenied, "only %s, who started run %s, may approve or decline stopping it", s.Executor, s.RunID)
	case s.Status == duet.StopExpired:
		return duet.StopRequestExpired(s)
	case s.Status != duet.StopPending:
		return duet.StopRequestDecided(s)
	}
	return nil
}

func NotFound(kind, id string) error {
	return duet.Errorf(duet.CodeNotFound, "%s %q not found", kind, id)
}

// CheckSecret refuses a secret no engine may store: no valid user or
// name, or no ciphertext.
func CheckSecret(s *duet.Secret) error {
	if err := duet.ValidUserID(s.User); err != nil {
		return err
	}
	if err := duet.ValidSecretName(s.Name); err != nil {
		return err
	}
	if len(s.Ciphertext) == 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "secret %s has no ciphertext", s.Name)
	}
	return nil
}

// CheckBaseline refuses a baseline no engine may store or one not of the
// run of lease l; a baseline without a status is pending.
func CheckBaseline(l duet.Lease, b *duet.Baseline) error {
	if b == nil || b.TaskID == "" || b.CaseID == "" || b.Name == "" || b.Owner == "" || len(b.Image) == 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "a baseline needs a task, a case, a name, an owner and an image")
	}
	if b.Status == "" {
		b.Status = duet.BaselinePending
	}
	if b.RunID != l.RunID {
		return duet.LeaseLost(l)
	}
	return nil
}

// CheckSession refuses a console session no engine may store; one without
// a creation time is created now.
func CheckSession(s *duet.Session, now time.Time) error {
	if s.Hash == "" || s.CSRF == "" || duet.ValidUserID(s.UserID) != nil || s.ExpiresAt.IsZero() {
		return duet.Errorf(duet.CodeInvalidArgument, "a session needs a hash, a CSRF token, a user and an expiry")
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	return nil
}

// CheckOAuthClient refuses a client no engine may store and returns its
// redirect URIs as stored; one without a creation time is created now.
func CheckOAuthClient(c *duet.OAuthClient, now time.Time) (uris string, err error) {
	if c.ID == "" || len(c.RedirectURIs) == 0 {
		return "", duet.Errorf(duet.CodeInvalidArgument, "a client needs an id and a redirect URI")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	b, err := json.Marshal(c.RedirectURIs)
	return string(b), err
}

// CheckDeviceLease refuses a device lease no engine may grant.
func CheckDeviceLease(l *duet.DeviceLease, ttl time.Duration) error {
	if l.Device == "" || l.Holder == "" || ttl <= 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "a device lease needs a device, a holder and a positive duration")
	}
	return nil
}

// NewToken checks a personal access token and readies it to be written at
// now: an id unless it has one, created now unless it says when, its
// creation time as the store keeps it. Returns INVALID_ARGUMENT.
func NewToken(t *duet.Token, now time.Time) error {
	if t.UserID == "" || t.Hash == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "a token needs a user and a hash")
	}
	if t.ID == "" {
		t.ID = duet.NewID("tok")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	t.CreatedAt = Stored(t.CreatedAt)
	return nil
}

// CheckApproval refuses an approval no engine may store: no user, case or
// version.
func CheckApproval(a *duet.CaseApproval) error {
	if a == nil || a.User == "" || a.CaseID == "" || a.Version <= 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "an approval needs a user, a case and its version")
	}
	return nil
}

// ApprovedVersion refuses a's approval of case c unless a approves c's
// current version. Returns CONFLICT.
func ApprovedVersion(c *duet.Case, a *duet.CaseApproval) error {
	if c.Version != a.Version {
		return duet.Errorf(duet.CodeConflict, "case %s is at version %d now, not %d: review it again before approving", c.ID, c.Version, a.Version)
	}
	return nil
}

// RewrapSecrets is duet.SecretStore's RewrapSecrets in the engine's
// transaction: read reads every secret with its ciphertext (locked against
// other writers), update stores a secret's new ciphertext; rewrap returns
// it, or nil to keep the old one.
func RewrapSecrets(rewrap func(s *duet.Secret) ([]byte, error), read func() ([]*duet.Secret, error), update func(s *duet.Secret, ct []byte) error) (replaced, total int, err error) {
	secrets, err := read()
	if err != nil {
		return 0, 0, err
	}
	for _, s := range secrets {
		ct, err := rewrap(s)
		if err != nil {
			return replaced, len(secrets), err
		}
		if ct == nil {
			continue
		}
		if err := update(s, ct); err != nil {
			return replaced, len(secrets), err
		}
		replaced++
	}
	return replaced, len(secrets), nil
}
