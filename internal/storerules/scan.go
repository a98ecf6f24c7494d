package storerules

import (
	"database/sql"
	"encoding/json"
	"time"

	"github.com/duet-test/duet"
)

// scanned is what a reader returns: v, or nil and err.
func scanned[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// TimePtrOf is TimeOf for a nullable time: NULL reads as nil.
func TimePtrOf(t **time.Time) sql.Scanner { return timePtrDest{t} }

type timePtrDest struct{ t **time.Time }

func (d timePtrDest) Scan(src any) error {
	if src == nil {
		*d.t = nil
		return nil
	}
	var v time.Time
	if err := (timeDest{&v}).Scan(src); err != nil {
		return err
	}
	*d.t = &v
	return nil
}

// The columns each reader below reads, and the readers: the same on both
// engines, times read with TimeOf.
const (
	TokenColumns      = `id, user_id, name, coalesce(parent_id, ''), hash, created_at, expires_at, last_used_at`
	ApprovalColumns   = `a.user_id, a.case_id, a.version, a.source_hash, a.destinations_hash, a.task_id, a.approved_at`
	StopColumns       = `s.id, s.run_id, s.task_id, s.executor, s.requested_by, s.reason, s.trace_id, s.status, s.via, s.decided_by, s.created_at, s.expires_at, s.decided_at`
	OAuthTokenColumns = `hash, kind, grant_id, client_id, user_id, scope, data, created_at, expires_at, used_at`
	MCPServerColumns  = `id, owner, name, url, server_key, credential_ref, header_names, auth, transport, protocol_version,
	server_name, server_version, catalog_hash, tool_count, synced_at, created_at, updated_at`
	CredentialColumns = `ref, owner, server_key, ciphertext, updated_at, version`
)

func ScanToken(r Row) (*duet.Token, error) {
	var t duet.Token
	return scanned(&t, r.Scan(&t.ID, &t.UserID, &t.Name, &t.ParentID, &t.Hash, TimeOf(&t.CreatedAt), TimePtrOf(&t.ExpiresAt), TimePtrOf(&t.LastUsedAt)))
}

func ScanApproval(r Row) (*duet.CaseApproval, error) {
	var a duet.CaseApproval
	return scanned(&a, r.Scan(&a.User, &a.CaseID, &a.Version, &a.SourceHash, &a.DestinationsHash, &a.TaskID, TimeOf(&a.ApprovedAt)))
}

func ScanStop(r Row) (*duet.StopRequest, error) {
	var s duet.StopRequest
	return scanned(&s, r.Scan(&s.ID, &s.RunID, &s.TaskID, &s.Executor, &s.RequestedBy, &s.Reason, &s.TraceID, &s.Status, &s.Via, &s.DecidedBy,
		TimeOf(&s.CreatedAt), TimeOf(&s.ExpiresAt), TimePtrOf(&s.DecidedAt)))
}

func ScanOAuthToken(r Row) (*duet.OAuthToken, error) {
	var t duet.OAuthToken
	var kind string
	err := r.Scan(&t.Hash, &kind, &t.GrantID, &t.ClientID, &t.UserID, &t.Scope, &t.Data, TimeOf(&t.CreatedAt), TimeOf(&t.ExpiresAt), TimePtrOf(&t.UsedAt))
	t.Kind = duet.OAuthTokenKind(kind)
	return scanned(&t, err)
}

// ScanMCPServer reads a server of MCPServerColumns, and extra after them.
func ScanMCPServer(r Row, extra ...any) (*duet.MCPServer, error) {
	var s duet.MCPServer
	var cred sql.NullString
	var headers string
	dest := []any{&s.ID, &s.Owner, &s.Name, &s.URL, &s.ServerKey, &cred, &headers, &s.Auth, &s.Transport, &s.ProtocolVersion,
		&s.ServerName, &s.ServerVersion, &s.CatalogHash, &s.ToolCount, TimePtrOf(&s.SyncedAt), TimeOf(&s.CreatedAt), TimeOf(&s.UpdatedAt)}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	s.CredentialRef = cred.String
	if err := json.Unmarshal([]byte(headers), &s.HeaderNames); err != nil {
		return nil, err
	}
	if len(s.HeaderNames) == 0 {
		s.HeaderNames = nil
	}
	return &s, nil
}

func ScanCredential(r Row) (*duet.Credential, error) {
	var c duet.Credential
	return scanned(&c, r.Scan(&c.Ref, &c.Owner, &c.ServerKey, &c.Ciphertext, TimeOf(&c.UpdatedAt), &c.Version))
}

// ScanSecret reads a secret of (user_id, name, ciphertext, created_at,
// updated_at); an empty ciphertext (a list's) is none.
func ScanSecret(r Row) (*duet.Secret, error) {
	var s duet.Secret
	if err := r.Scan(&s.User, &s.Name, &s.Ciphertext, TimeOf(&s.CreatedAt), TimeOf(&s.UpdatedAt)); err != nil {
		return nil, err
	}
	if len(s.Ciphertext) == 0 {
		s.Ciphertext = nil
	}
	return &s, nil
}

// ScanSealedSecret reads a secret of (user_id, name, ciphertext).
func ScanSealedSecret(r Row) (*duet.Secret, error) {
	var s duet.Secret
	return scanned(&s, r.Scan(&s.User, &s.Name, &s.Ciphertext))
}

// ScanMCPTool reads a tool of (name, title, description, input_schema,
// output_schema, annotations).
func ScanMCPTool(r Row) (*duet.MCPTool, error) {
	var t duet.MCPTool
	var in, out, ann string
	if err := r.Scan(&t.Name, &t.Title, &t.Description, &in, &out, &ann); err != nil {
		return nil, err
	}
	t.InputSchema, t.OutputSchema, t.Annotations = RawJSON(in), RawJSON(out), RawJSON(ann)
	return &t, nil
}

// TaskColumns are the columns of tasks t that ScanTask reads.
const TaskColumns = `t.id, t.owner, t.name, t.description, t.base_url, t.device, t.created_at, t.updated_at, t.post_run, t.post_run_by, t.run_config, t.hooks_by, t.trace`

// ScanTask reads a row of TaskColumns: a task without its shares
// (SharedWith empty, for the caller to fill).
func ScanTask(r Row) (*duet.Task, error) {
	var t duet.Task
	var postRun, runConfig string
	if err := r.Scan(&t.ID, &t.Owner, &t.Name, &t.Description, &t.BaseURL, &t.Device, TimeOf(&t.CreatedAt), TimeOf(&t.UpdatedAt), &postRun, &t.PostRunBy, &runConfig, &t.HooksBy, &t.Trace); err != nil {
		return nil, err
	}
	t.SharedWith = []string{}
	var err error
	if t.PostRun, err = DecodePostRun(t.ID, postRun); err != nil {
		return nil, err
	}
	return &t, DecodeRunConfig(&t, runConfig)
}

// CaseFields are the columns of cases c that ScanCase reads.
const CaseFields = `c.id, c.task_id, c.key, c.title, c.source, c.source_hash, c.steps, c.timeout_ms, c.version, c.status, c.created_by, c.created_at, c.updated_at, c.row, c.retries, c.tags`

// ScanCase reads a row of CaseFields (and, after them, any columns the row
// sends elsewhere).
func ScanCase(r Row) (*duet.Case, error) {
	var c duet.Case
	var steps, row, tags string
	if err := r.Scan(&c.ID, &c.TaskID, &c.Key, &c.Title, &c.Source, &c.SourceHash, &steps, &c.TimeoutMs, &c.Version, &c.Status, &c.CreatedBy, TimeOf(&c.CreatedAt), TimeOf(&c.UpdatedAt), &row, &c.Retries, &tags); err != nil {
		return nil, err
	}
	return &c, DecodeCase(&c, steps, row, tags)
}
