package duet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// CaseApproval is a user's consent that one version of a case someone else
// wrote may call MCP tools with the user's own credentials — any tool,
// read-only ones included — and send what it obtains to the places it was
// shown (Destinations). A shared task runs its author's steps as the
// executor: without this consent such a step fails with APPROVAL_REQUIRED.
// Editing the case makes a new version, and a change of where the version
// can send data (the task's base URL, its post-run actions) a new
// Destinations hash: either needs a new approval.
type CaseApproval struct {
	User       string `json:"user"`
	CaseID     string `json:"caseId"`
	Version    int    `json:"version"`
	SourceHash string `json:"sourceHash"` // of the approved version's source
	// DestinationsHash is Destinations.Hash of what the approval showed:
	// the approval holds only while the version can send data to those
	// places and no others.
	DestinationsHash string    `json:"destinationsHash"`
	TaskID           string    `json:"taskId"`
	ApprovedAt       time.Time `json:"approvedAt"`
}

// Holds reports whether the approval covers a run of its version that can
// send data to the destinations whose hash is destinationsHash.
func (a *CaseApproval) Holds(destinationsHash string) bool {
	return a != nil && a.DestinationsHash != "" && a.DestinationsHash == destinationsHash
}

// AnyHost is how Destinations names the hosts of a URL built from a
// variable at run time.
const AnyHost = "any host the network guard allows"

// Destinations are every place a version of a case can send data to when it
// runs: what an approval of it shows and is bound to (its Hash). The
// engine computes them (engine.DestinationsOf).
type Destinations struct {
	// BaseHost is the host of the task's base URL ("" without one): its
	// pages, which the task's owner controls, see whatever the browser
	// types into them, and relative URLs go there.
	BaseHost string `json:"baseHost,omitempty"`
	// Hosts are every host the case's open and http steps can reach,
	// the base URL's included, sorted.
	Hosts []string `json:"hosts"`
	// AnyHost: an open or http step builds its URL's host from a variable
	// at run time, so it can reach any host the network guard allows.
	AnyHost bool `json:"anyHost,omitempty"`
	// Tools are the MCP tools the case's steps call: each call's inputs
	// go to that server.
	Tools []ToolDestination `json:"tools"`
	// PostRun are the tools the task's post-run actions call at the end
	// of a run: the run's summary (failed cases' messages included) goes
	// to them.
	PostRun []ToolDestination `json:"postRun"`
}

// ToolDestination is an MCP tool data can be sent to.
type ToolDestination struct {
	ServerKey  string `json:"serverKey"`
	ServerName string `json:"serverName,omitempty"` // as the author wrote it, for display
	Tool       string `json:"tool"`
}

// Hash identifies the destinations (hosts, servers and tools; display names
// aside): an approval is bound to it.
func (d Destinations) Hash() string {
	var b strings.Builder
	fmt.Fprintf(&b, "duet destinations v1\nbase %s\nany %v\n", d.BaseHost, d.AnyHost)
	for _, h := range d.Hosts {
		fmt.Fprintf(&b, "host %s\n", h)
	}
	for _, list := range []struct {
		name  string
		tools []ToolDestination
	}{{"tool", d.Tools}, {"postrun", d.PostRun}} {
		keys := make([]string, 0, len(list.tools))
		for _, t := range list.tools {
			keys = append(keys, t.ServerKey+" "+t.Tool)
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			fmt.Fprintf(&b, "%s %s\n", list.name, k)
		}
	}
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:])
}

// Lines describes the destinations for a person, one place a line.
func (d Destinations) Lines() []string {
	var out []string
	for _, h := range d.Hosts {
		if h == d.BaseHost {
			out = append(out, "host "+h+" (the task's base URL: its pages see what the browser types into them)")
			continue
		}
		out = append(out, "host "+h)
	}
	if d.AnyHost {
		out = append(out, AnyHost+" (a URL built from a variable at run time)")
	}
	for _, t := range d.Tools {
		out = append(out, "MCP tool "+t.Tool+" of "+t.Server())
	}
	for _, t := range d.PostRun {
		out = append(out, "MCP tool "+t.Tool+" of "+t.Server()+" (a post-run action)")
	}
	return out
}

// Server names the tool's server: the author's name for it and its key.
func (t ToolDestination) Server() string {
	if t.ServerName == "" || t.ServerName == t.ServerKey {
		return t.ServerKey
	}
	return t.ServerName + " (" + t.ServerKey + ")"
}

// ApprovalStore keeps case approvals.
type ApprovalStore interface {
	// ApproveCase records a.User's approval of version a.Version of case
	// a.CaseID, bound to a.DestinationsHash (what the approval showed),
	// which must be the case's current version and a case a.User may see;
	// it fills SourceHash, TaskID and ApprovedAt. Approving a version again
	// with the same DestinationsHash keeps the first approval; with another
	// one, the approval is of the new destinations from now on. Returns
	// NOT_FOUND, CONFLICT
	// (the case has another version now: review it again),
	// INVALID_ARGUMENT.
	ApproveCase(ctx context.Context, a *CaseApproval) error

	// FindCaseApproval returns user's approval of that version of the case.
	// Returns NOT_FOUND.
	FindCaseApproval(ctx context.Context, user, caseID string, version int) (*CaseApproval, error)

	// FindCaseApprovals lists user's approvals, of the cases of taskID only
	// when it is not "", newest first.
	FindCaseApprovals(ctx context.Context, user, taskID string) ([]*CaseApproval, error)

	// RevokeCaseApproval withdraws user's approvals of every version of the
	// case. Returns NOT_FOUND when there was none.
	RevokeCaseApproval(ctx context.Context, user, caseID string) error

	// ApprovePostRun records user's approval of the post-run actions of
	// taskID in the version hash (PostRunHash), which must be the task's
	// current version, of a task user may see. Approving again keeps the
	// first approval. Returns NOT_FOUND, CONFLICT (the actions changed:
	// review them again), INVALID_ARGUMENT (the task has none).
	ApprovePostRun(ctx context.Context, user, taskID, hash string) (*PostRunApproval, error)

	// FindPostRunApproval returns user's approval of that version of the
	// task's post-run actions. Returns NOT_FOUND.
	FindPostRunApproval(ctx context.Context, user, taskID, hash string) (*PostRunApproval, error)
}

// ReadOnly reports whether the server annotated the tool readOnlyHint: true.
// Annotations are hints from the server; a tool without them is not
// read-only.
func (t *MCPTool) ReadOnly() bool {
	if t == nil || len(t.Annotations) == 0 {
		return false
	}
	var a struct {
		ReadOnly bool `json:"readOnlyHint"`
	}
	return json.Unmarshal(t.Annotations, &a) == nil && a.ReadOnly
}

// PendingCall is a step of a case version that needs its executor's
// approval before it calls a tool with the executor's credentials (what
// the engine's review of a version finds, and what the catalog asks the
// executor about).
type PendingCall struct {
	Step       int    `json:"step"` // from 1
	Name       string `json:"name"`
	ServerKey  string `json:"serverKey"`
	ServerName string `json:"serverName,omitempty"` // as the author wrote it
	Tool       string `json:"tool"`
}
