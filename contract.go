package duet

import (
	"context"
	"time"
)

// ContractAlert says that an MCP tool a case calls changed under it: found
// when a sync of the tool's server archived a catalog that differs from the
// one before (another team changed its tool). Broken when the case's call no
// longer fits the new catalog (the tool is gone, a required argument was
// added, an argument it passes was removed, a value it passes no longer
// validates: a type changed, an enum option went); otherwise the change was
// compatible and the alert shows the difference. An alert concerns one
// version of the case: applying a new version (compiled against the new
// catalog) clears it.
type ContractAlert struct {
	TaskID      string    `json:"taskId"`
	CaseID      string    `json:"caseId"`
	CaseKey     string    `json:"caseKey"`
	CaseTitle   string    `json:"caseTitle"`
	CaseVersion int       `json:"caseVersion"`
	ServerKey   string    `json:"serverKey"`
	Tool        string    `json:"tool"`
	Broken      bool      `json:"broken"`
	Problems    []string  `json:"problems,omitempty"` // why the call no longer fits (Broken)
	Changes     []string  `json:"changes"`            // what changed in the tool
	DetectedAt  time.Time `json:"detectedAt"`
}

// ContractStore keeps contract alerts.
type ContractStore interface {
	// FindCasesCallingServer returns the active cases whose mcpCall steps
	// call a tool of serverKey (internal: no viewer).
	FindCasesCallingServer(ctx context.Context, serverKey string) ([]*Case, error)
	// SaveContractAlerts stores alerts, replacing the earlier alert of the
	// same case, server and tool.
	SaveContractAlerts(ctx context.Context, alerts []*ContractAlert) error
	// FindContractAlerts returns the alerts of the current versions of the
	// cases of a task viewer may see ("" taskID: of every such task),
	// broken first.
	FindContractAlerts(ctx context.Context, viewer, taskID string) ([]*ContractAlert, error)
}

// CallsServer reports whether a step of c calls a tool of serverKey.
func CallsServer(c *Case, serverKey string) bool {
	for _, s := range c.Steps {
		if s.MCP != nil && s.MCP.ServerKey == serverKey {
			return true
		}
	}
	return false
}

// ArchivedCatalog is an earlier archived catalog of a registration: the
// one a sync replaced with a different one.
type ArchivedCatalog struct {
	SyncedAt time.Time  `json:"syncedAt"`
	Hash     string     `json:"hash"`
	Tools    []*MCPTool `json:"tools"`
}

// CatalogHistoryStore keeps the catalogs syncs replaced, the latest few per
// registration, so that what changed can be shown (duet server diff).
type CatalogHistoryStore interface {
	// SaveCatalogHistory keeps c as the catalog registration id had before
	// its latest sync, keeping the newest MaxCatalogHistory.
	SaveCatalogHistory(ctx context.Context, id string, c *ArchivedCatalog) error
	// FindCatalogHistory returns the earlier catalogs of registration id,
	// newest first.
	FindCatalogHistory(ctx context.Context, id string) ([]*ArchivedCatalog, error)
}

// MaxCatalogHistory is how many replaced catalogs a registration keeps.
const MaxCatalogHistory = 10

// CatalogSyncStore hands out the registrations whose catalog is due for an
// automatic sync, each to one instance.
type CatalogSyncStore interface {
	// ClaimCatalogSync returns a registration neither synced nor claimed
	// for an automatic sync since every before now (the longest waiting
	// first), and marks it claimed at now; nil when none is due. Of
	// several instances claiming at once, one gets each registration.
	ClaimCatalogSync(ctx context.Context, now time.Time, every time.Duration) (*MCPServer, error)
}
