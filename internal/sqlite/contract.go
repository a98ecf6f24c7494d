package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// FindCasesCallingServer returns the active cases whose steps call a tool
// of serverKey.
func (d *DB) FindCasesCallingServer(ctx context.Context, serverKey string) ([]*duet.Case, error) {
	rows, err := d.q.QueryContext(ctx, `SELECT `+caseColumns+` FROM cases c WHERE c.status = 'active' AND instr(c.steps, ?) > 0 ORDER BY c.task_id, c.key`, `"`+serverKey+`"`)
	if err != nil {
		return nil, mapErr(err)
	}
	cases, err := collect(rows, scanCase)
	return storerules.CallingServer(cases, err, serverKey)
}

// SaveContractAlerts stores alerts, each replacing the earlier one of its
// case, server and tool.
func (d *DB) SaveContractAlerts(ctx context.Context, alerts []*duet.ContractAlert) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		for _, a := range alerts {
			detail, err := storerules.ContractAlertDetail(a)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO contract_alerts (case_id, server_key, tool, task_id, case_version, broken, detail, detected_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (case_id, server_key, tool) DO UPDATE SET task_id = excluded.task_id, case_version = excluded.case_version, broken = excluded.broken, detail = excluded.detail, detected_at = excluded.detected_at`,
				a.CaseID, a.ServerKey, a.Tool, a.TaskID, a.CaseVersion, a.Broken, detail, micros(a.DetectedAt)); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
}

// FindContractAlerts returns the alerts of the current case versions of the
// tasks viewer may see.
func (d *DB) FindContractAlerts(ctx context.Context, viewer, taskID string) ([]*duet.ContractAlert, error) {
	if viewer == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a viewer is required")
	}
	q := `SELECT ` + storerules.ContractAlertColumns + `
		FROM contract_alerts a JOIN cases c ON c.id = a.case_id AND c.version = a.case_version AND c.status = 'active'
		JOIN tasks t ON t.id = a.task_id WHERE ` + visibleTo
	args := []any{viewer}
	if taskID != "" {
		q += ` AND a.task_id = ?2`
		args = append(args, taskID)
	}
	rows, err := d.q.QueryContext(ctx, q+` ORDER BY a.broken DESC, a.task_id, c.key, a.server_key, a.tool`, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, storerules.ScanContractAlert)

}

// SaveCatalogHistory keeps a replaced catalog of a registration, the
// newest duet.MaxCatalogHistory of them.
func (d *DB) SaveCatalogHistory(ctx context.Context, id string, c *duet.ArchivedCatalog) error {
	tools, err := json.Marshal(c.Tools)
	if err != nil {
		return err
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO mcp_catalog_history (registration_id, synced_at, hash, tools) VALUES (?, ?, ?, ?)
			ON CONFLICT (registration_id, synced_at) DO UPDATE SET hash = excluded.hash, tools = excluded.tools`, id, micros(c.SyncedAt), c.Hash, string(tools)); err != nil {
			return mapErr(err)
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM mcp_catalog_history WHERE registration_id = ? AND synced_at NOT IN
			(SELECT synced_at FROM mcp_catalog_history WHERE registration_id = ? ORDER BY synced_at DESC LIMIT ?)`, id, id, duet.MaxCatalogHistory)
		return mapErr(err)
	})
}

// FindCatalogHistory returns the replaced catalogs of a registration,
// newest first.
func (d *DB) FindCatalogHistory(ctx context.Context, id string) ([]*duet.ArchivedCatalog, error) {
	return all(ctx, d.q, storerules.ScanArchivedCatalog, `SELECT synced_at, hash, tools FROM mcp_catalog_history WHERE registration_id = ? ORDER BY synced_at DESC`, id)
}
