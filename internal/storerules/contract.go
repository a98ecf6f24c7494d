package storerules

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/duet-test/duet"
)

// alertDetail is how a contract alert's problems, changes and case are
// stored (its detail column).
type alertDetail struct {
	Problems []string `json:"problems,omitempty"`
	Changes  []string `json:"changes"`
	Key      string   `json:"key"`
	Title    string   `json:"title"`
}

// ContractAlertDetail is a's detail as stored.
func ContractAlertDetail(a *duet.ContractAlert) (string, error) {
	b, err := json.Marshal(alertDetail{Problems: a.Problems, Changes: a.Changes, Key: a.CaseKey, Title: a.CaseTitle})
	return string(b), err
}

// ContractAlertColumns are the columns of contract_alerts a that
// ScanContractAlert reads.
const ContractAlertColumns = `a.task_id, a.case_id, a.case_version, a.server_key, a.tool, a.broken, a.detail, a.detected_at`

// ScanContractAlert reads an alert of ContractAlertColumns.
func ScanContractAlert(r Row) (*duet.ContractAlert, error) {
	var a duet.ContractAlert
	var detail string
	if err := r.Scan(&a.TaskID, &a.CaseID, &a.CaseVersion, &a.ServerKey, &a.Tool, &a.Broken, &detail, TimeOf(&a.DetectedAt)); err != nil {
		return nil, err
	}
	var dt alertDetail
	if err := json.Unmarshal([]byte(detail), &dt); err != nil {
		return nil, err
	}
	a.Problems, a.Changes, a.CaseKey, a.CaseTitle = dt.Problems, dt.Changes, dt.Key, dt.Title
	return &a, nil
}

// ScanArchivedCatalog reads a catalog of (synced_at, hash, tools).
func ScanArchivedCatalog(r Row) (*duet.ArchivedCatalog, error) {
	var c duet.ArchivedCatalog
	var tools string
	if err := r.Scan(TimeOf(&c.SyncedAt), &c.Hash, &tools); err != nil {
		return nil, err
	}
	return scanned(&c, json.Unmarshal([]byte(tools), &c.Tools))
}

// CallingServer keeps the cases, read with err, whose steps call a tool
// of serverKey (the engine's query finds those naming it).
func CallingServer(cases []*duet.Case, err error, serverKey string) ([]*duet.Case, error) {
	return slices.DeleteFunc(cases, func(c *duet.Case) bool { return !duet.CallsServer(c, serverKey) }), err
}

// Contracts is the part of duet.ContractStore that is the same on every
// engine: storing alerts, and a registration's replaced catalogs.
type Contracts struct{ E Engine }

// SaveContractAlerts stores alerts, each replacing the earlier one of its
// case, server and tool, in one transaction.
func (s Contracts) SaveContractAlerts(ctx context.Context, alerts []*duet.ContractAlert) error {
	return s.E.Tx(ctx, func(tx Engine) error {
		for _, a := range alerts {
			detail, err := ContractAlertDetail(a)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO contract_alerts (case_id, server_key, tool, task_id, case_version, broken, detail, detected_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
				ON CONFLICT (case_id, server_key, tool) DO UPDATE SET task_id = excluded.task_id, case_version = excluded.case_version, broken = excluded.broken, detail = excluded.detail, detected_at = excluded.detected_at`,
				a.CaseID, a.ServerKey, a.Tool, a.TaskID, a.CaseVersion, a.Broken, detail, tx.Stored(a.DetectedAt)); err != nil {
				return err
			}
		}
		return nil
	})
}

// SaveCatalogHistory keeps a replaced catalog of a registration, the
// newest duet.MaxCatalogHistory of them.
func (s Contracts) SaveCatalogHistory(ctx context.Context, id string, c *duet.ArchivedCatalog) error {
	tools, err := json.Marshal(c.Tools)
	if err != nil {
		return err
	}
	return s.E.Tx(ctx, func(tx Engine) error {
		if _, err := tx.Exec(ctx, `INSERT INTO mcp_catalog_history (registration_id, synced_at, hash, tools) VALUES ($1, $2, $3, $4)
			ON CONFLICT (registration_id, synced_at) DO UPDATE SET hash = excluded.hash, tools = excluded.tools`, id, tx.Stored(c.SyncedAt), c.Hash, string(tools)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM mcp_catalog_history WHERE registration_id = $1 AND synced_at NOT IN
			(SELECT synced_at FROM mcp_catalog_history WHERE registration_id = $1 ORDER BY synced_at DESC LIMIT $2)`, id, duet.MaxCatalogHistory)
		return err
	})
}

// FindCatalogHistory returns the replaced catalogs of a registration,
// newest first.
func (s Contracts) FindCatalogHistory(ctx context.Context, id string) ([]*duet.ArchivedCatalog, error) {
	return All(ctx, s.E, ScanArchivedCatalog, `SELECT synced_at, hash, tools FROM mcp_catalog_history WHERE registration_id = $1 ORDER BY synced_at DESC`, id)
}

// ContractAlertsQuery is the statement of FindContractAlerts: the alerts of
// the current versions of active cases of the tasks t viewer ($1) may see
// (visibleTo, the engine's condition), of task taskID only unless it is "".
func ContractAlertsQuery(visibleTo, viewer, taskID string) (string, []any) {
	q := `SELECT ` + ContractAlertColumns + `
		FROM contract_alerts a JOIN cases c ON c.id = a.case_id AND c.version = a.case_version AND c.status = 'active'
		JOIN tasks t ON t.id = a.task_id WHERE ` + visibleTo
	args := []any{viewer}
	if taskID != "" {
		q += ` AND a.task_id = $2`
		args = append(args, taskID)
	}
	return q + ` ORDER BY a.broken DESC, a.task_id, c.key, a.server_key, a.tool`, args
}

// FindContractAlerts returns the alerts of the current case versions of
// the tasks viewer may see. Returns INVALID_ARGUMENT without a viewer.
func (s Contracts) FindContractAlerts(ctx context.Context, viewer, taskID string) ([]*duet.ContractAlert, error) {
	if viewer == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a viewer is required")
	}
	q, args := ContractAlertsQuery(s.E.VisibleTo, viewer, taskID)
	return All(ctx, s.E, ScanContractAlert, q, args...)
}
