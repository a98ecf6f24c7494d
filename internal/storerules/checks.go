package storerules

import (
	"strings"

	"github.com/duet-test/duet"
)

// CheckAIPlan is what a plan must hold to be stored.
func CheckAIPlan(l duet.Lease, p *duet.AIPlan) error {
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
