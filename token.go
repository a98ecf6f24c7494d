package duet

import (
	"context"
	"time"
)

// Token is a personal access token. Only a hash of the secret is stored.
type Token struct {
	ID         string     `json:"id"`
	UserID     string     `json:"userId"`
	Name       string     `json:"name"`
	Hash       string     `json:"-"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
}

// TokenStore keeps personal access tokens.
type TokenStore interface {
	// CreateToken stores t. Returns INVALID_ARGUMENT.
	CreateToken(ctx context.Context, t *Token) error
	// FindTokenByHash returns the unexpired token with that hash.
	// Returns UNAUTHENTICATED when there is none.
	FindTokenByHash(ctx context.Context, hash string) (*Token, error)
	// FindTokens lists a user's tokens.
	FindTokens(ctx context.Context, userID string) ([]*Token, error)
	// DeleteToken revokes one of the user's tokens. Returns NOT_FOUND.
	DeleteToken(ctx context.Context, userID, id string) error
}

// AuditRecord is one call through any door: who called which tool or method,
// how it ended and how long it took. It holds sizes, never values.
type AuditRecord struct {
	ID          int64      `json:"id"`
	Time        time.Time  `json:"time"`
	TraceID     string     `json:"traceId"`
	CallSource  CallSource `json:"callSource"`
	Caller      string     `json:"caller"`
	Method      string     `json:"method"` // e.g. tools/call, tools/list, apply
	Tool        string     `json:"tool,omitempty"`
	Outcome     Code       `json:"outcome"` // "OK" or an error code
	DurationUs  int64      `json:"durationUs"`
	ArgBytes    int        `json:"argBytes"`
	ResultBytes int        `json:"resultBytes"`
}

// OutcomeOK is the outcome of a call that succeeded.
const OutcomeOK Code = "OK"

// AuditFilter selects audit records, newest first.
type AuditFilter struct {
	Caller     string
	Tool       string
	Method     string
	CallSource CallSource
	Outcome    Code
	TraceID    string
	Since      time.Time
	Until      time.Time
	Limit      int // 0 means 100
}

// AuditStore keeps the audit trail.
//
// Besides these methods, every store writes the record of an AuditIntent
// in ctx in the transaction of the first change it commits in that context
// (audit.go): a change and its audit record are stored together or not at
// all.
type AuditStore interface {
	// AppendAudit stores records in one transaction.
	AppendAudit(ctx context.Context, recs []*AuditRecord) error
	// CompleteAudit stores the final state of records written earlier with
	// a change (by ID) — caller, method, tool, outcome, duration and sizes;
	// not the time, trace or source — in one transaction.
	CompleteAudit(ctx context.Context, recs []*AuditRecord) error
	// FindAudit returns records matching filter, newest first.
	FindAudit(ctx context.Context, filter AuditFilter) ([]*AuditRecord, error)
}
