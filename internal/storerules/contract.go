package storerules

import (
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
