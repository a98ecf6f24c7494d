package duet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// PostRunWhen says after which runs a post-run action is made.
type PostRunWhen string

// When post-run actions are made.
const (
	PostRunOnSuccess PostRunWhen = "success" // the run passed
	PostRunOnFailure PostRunWhen = "failure" // the run failed or ended in error
	PostRunAlways    PostRunWhen = "always"  // any end: passed, failed, error or cancelled
	// PostRunOnFlaky: the run passed and some of its cases only on a
	// retry. Webhooks only (Webhook.Wants): a post-run action does not
	// take it (Matches is false).
	PostRunOnFlaky PostRunWhen = "flaky"
)

// Matches reports whether an action declared for w is made after a run
// that ended with status.
func (w PostRunWhen) Matches(status RunStatus) bool {
	switch w {
	case PostRunOnSuccess:
		return status == StatusPassed
	case PostRunOnFailure:
		return status == StatusFailed || status == StatusError
	case PostRunAlways:
		return status.Final()
	}
	return false
}

// PostRunAction is an MCP tool call a task declares for the end of its
// runs (file a ticket, post to a chat tool). It is made as the run's
// executor, with the executor's own registration and credentials, through
// the one Invoker (call source post-run). Its failure never changes the
// run's verdict. Inputs are bindings over the run's summary (the variables
// task and run).
type PostRunAction struct {
	Name          string             `json:"name"`
	On            PostRunWhen        `json:"on"`
	ServerKey     string             `json:"serverKey"`
	ServerName    string             `json:"serverName,omitempty"` // as written by the author, for display
	ToolName      string             `json:"toolName"`
	InputBindings map[string]Binding `json:"inputBindings"`  // value and var bindings only
	Line          int                `json:"line,omitempty"` // in the suite file
}

// PostRunHash identifies one version of a task's post-run actions (source
// lines aside): an executor's approval of them is of that version.
func PostRunHash(actions []*PostRunAction) string {
	if len(actions) == 0 {
		return ""
	}
	unlined := make([]PostRunAction, len(actions))
	for i, a := range actions {
		unlined[i] = *a
		unlined[i].Line = 0
	}
	b, _ := json.Marshal(unlined)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// PostRunResult is the outcome of one post-run action of a run: a note on
// the run, never part of its verdict.
type PostRunResult struct {
	Index        int       `json:"index"` // in the task's list, from 0
	Name         string    `json:"name"`
	ServerKey    string    `json:"serverKey"`
	Tool         string    `json:"tool"`
	Status       RunStatus `json:"status"` // passed (the call succeeded) or failed
	ErrorCode    Code      `json:"errorCode,omitempty"`
	ErrorMessage string    `json:"errorMessage,omitempty"`
	DurationMs   int64     `json:"durationMs"`
}

// PostRunApproval is a user's consent that one version of the post-run
// actions of a task someone else wrote may call, with the user's own
// credentials, the tools they name at the end of the user's runs (the
// hash covers the servers, the tools and what each is sent).
type PostRunApproval struct {
	User       string    `json:"user"`
	TaskID     string    `json:"taskId"`
	Hash       string    `json:"hash"` // PostRunHash of the approved version
	ApprovedAt time.Time `json:"approvedAt"`
}
