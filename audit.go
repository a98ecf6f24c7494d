package duet

import (
	"context"
	"sync"
	"time"
)

// AuditIntent is the audit record of one call that may change data, handed
// to the store in the call's context (WithAuditIntent): the first change
// the store commits in that context writes the record in the same
// transaction, so that no change is ever stored without its audit record,
// whatever becomes of the process afterwards. The caller completes the
// record (outcome, duration, result size) when the call ends: Close tells
// it whether a change wrote the record, and under which id.
//
// Stores take it in their write transactions (Take, then Stored or
// Released); a call that changes nothing leaves it open, and its caller
// records the call as any other.
type AuditIntent struct {
	mu    sync.Mutex
	cond  sync.Cond
	rec   AuditRecord
	build func() AuditRecord // the record as known when it is taken, if set
	state intentState
	id    int64
}

type intentState int

const (
	intentOpen   intentState = iota
	intentTaken              // a transaction about to commit holds it
	intentStored             // written with a change: id
	intentClosed             // the call ended
)

// NewAuditIntent returns the intent of rec, a call that began at rec.Time.
func NewAuditIntent(rec AuditRecord) *AuditIntent {
	a := &AuditIntent{rec: rec}
	a.cond.L = &a.mu
	return a
}

// NewAuditIntentFunc returns the intent of the record build returns when a
// change takes it — for a call that learns who it concerns as it goes.
// build runs in the goroutine of the change (the call's own).
func NewAuditIntentFunc(build func() AuditRecord) *AuditIntent {
	a := &AuditIntent{build: build}
	a.cond.L = &a.mu
	return a
}

type auditIntentKey struct{}

// WithAuditIntent returns ctx carrying a: the changes made in it write a's
// record. An intent in ctx already is hidden by a (a call within a call).
func WithAuditIntent(ctx context.Context, a *AuditIntent) context.Context {
	return context.WithValue(ctx, auditIntentKey{}, a)
}

// AuditIntentFrom returns the intent ctx carries, or nil.
func AuditIntentFrom(ctx context.Context) *AuditIntent {
	a, _ := ctx.Value(auditIntentKey{}).(*AuditIntent)
	return a
}

// Pending reports whether the intent's record is still to be written by a
// change (a nil intent never is).
func (a *AuditIntent) Pending() bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state == intentOpen || a.state == intentTaken
}

// Take hands the record to a transaction that is about to commit a change:
// it returns the record to insert in that transaction (outcome OK, the
// duration so far), or nil when there is none to write — no intent, the
// record already written with another change, or the call over. While
// another transaction holds it, Take waits for that one to commit or not.
// The taker must call Stored or Released.
func (a *AuditIntent) Take() *AuditRecord {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.state == intentTaken {
		a.cond.Wait()
	}
	if a.state != intentOpen {
		return nil
	}
	a.state = intentTaken
	rec := a.rec
	if a.build != nil {
		rec = a.build()
	}
	rec.Outcome = OutcomeOK
	rec.DurationUs = time.Since(rec.Time).Microseconds()
	return &rec
}

// Stored records that the transaction holding the record committed it
// under id.
func (a *AuditIntent) Stored(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.state, a.id = intentStored, id
	a.cond.Broadcast()
}

// Released records that the transaction holding the record did not commit:
// the next change writes it.
func (a *AuditIntent) Released() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.state = intentOpen
	a.cond.Broadcast()
}

// Close ends the intent when the call ends: no change takes it after. It
// returns the id of the record a change wrote (the caller completes that
// record), or 0 when none did (the caller records the call).
func (a *AuditIntent) Close() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.state == intentTaken {
		a.cond.Wait()
	}
	id := a.id
	a.state = intentClosed
	return id
}
