package duet

import (
	"context"
	"time"
)

// CheckChildToken is the one rule of token lineage, applied by the stores
// in the transaction that stores t: t's parent (a token of parentUser
// expiring at parentExpires, nil for never) may create only tokens of the
// same user that expire no later than itself. Returns INVALID_ARGUMENT,
// PERMISSION_DENIED.
func CheckChildToken(t *Token, parentUser string, parentExpires *time.Time) error {
	if parentUser != t.UserID {
		return Errorf(CodeInvalidArgument, "token %s belongs to another user: a token creates tokens of its own user only", t.ParentID)
	}
	if parentExpires == nil {
		return nil
	}
	if t.ExpiresAt == nil || t.ExpiresAt.After(*parentExpires) {
		want := "no expiry"
		if t.ExpiresAt != nil {
			want = "an expiry at " + t.ExpiresAt.UTC().Format(time.RFC3339)
		}
		return Errorf(CodePermissionDenied, "the token this request authenticated with (%s) expires at %s, and a token it creates may not outlive it: asked for %s; ask for an expiry at or before %s (a token with a longer life is created signed in another way: the console through SSO, or duet token create)",
			t.ParentID, parentExpires.UTC().Format(time.RFC3339), want, parentExpires.UTC().Format(time.RFC3339))
	}
	return nil
}

// ParentTokenGone is the UNAUTHENTICATED of a token created with a token
// that was revoked, or expired, while the request ran.
func ParentTokenGone(id string) error {
	return Errorf(CodeUnauthenticated, "the token this request authenticated with (%s) was revoked or has expired", id)
}

// Token is a personal access token. Only a hash of the secret is stored.
//
// A token created by a request that authenticated with another token (or
// with a console session started with one) is that token's child: it
// expires no later than its parent, and revoking the parent revokes it
// (and, transitively, what it created).
type Token struct {
	ID         string     `json:"id"`
	UserID     string     `json:"userId"`
	Name       string     `json:"name"`
	ParentID   string     `json:"parentId,omitempty"` // the token that created it ("" when none did)
	Hash       string     `json:"-"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
}

// TokenStore keeps personal access tokens.
type TokenStore interface {
	// CreateToken stores t. With t.ParentID set, in the same transaction:
	// the parent must be an unexpired token of t.UserID (UNAUTHENTICATED
	// when it was revoked or expired meanwhile), and t must expire no
	// later than the parent (PERMISSION_DENIED for a later expiry or none
	// under a parent that expires). Returns INVALID_ARGUMENT,
	// UNAUTHENTICATED, PERMISSION_DENIED.
	CreateToken(ctx context.Context, t *Token) error
	// FindTokenByHash returns the unexpired token with that hash.
	// Returns UNAUTHENTICATED when there is none.
	FindTokenByHash(ctx context.Context, hash string) (*Token, error)
	// FindTokens lists a user's tokens.
	FindTokens(ctx context.Context, userID string) ([]*Token, error)
	// DeleteToken revokes one of the user's tokens and, in the same
	// transaction, every token it created, transitively, with the console
	// sessions started with any of them. Returns NOT_FOUND.
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
