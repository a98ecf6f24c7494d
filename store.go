package duet

import "context"

// Store is everything Duet keeps, behind one handle. Each database engine
// (internal/sqlite today) implements it, and internal/storetest holds the one
// suite of tests every implementation must pass.
type Store interface {
	TaskStore
	CaseStore
	RunStore
	TokenStore
	AuditStore
	TeamStore

	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}
