package duet

import "context"

// Store is everything Duet keeps, behind one handle: the whole of what the
// application needs from a database. Each database engine implements it
// (internal/sqlite for one machine, internal/postgres for several instances
// on one database), and internal/storetest holds the one suite of tests
// every implementation must pass. Nothing above the drivers names a driver
// type: internal/app opens the engine the configuration selects and hands
// this interface to everything else.
type Store interface {
	TaskStore
	CaseStore
	RunStore
	TokenStore
	AuditStore
	MCPClientStore
	AssetStore
	GenerationStore
	DeviceLeaseStore
	ApprovalStore
	TeamStore
	StopRequestStore
	SessionStore
	OAuthStore
	ScheduleStore
	ContractStore
	CatalogHistoryStore
	SecretStore
	SavedSessionStore
	BaselineStore
	MetricStore
	AICacheStore
	LLMUsageStore
	WebhookStore
	CatalogSyncStore
	SuiteSourceStore
	CaseVersionStore

	// Ping checks that the database answers. Returns UNAVAILABLE.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}
