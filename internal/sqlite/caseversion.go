package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// saveCaseVersions keeps the version of each case of suite s that its
// apply (res) created or changed, in the apply's transaction.
func saveCaseVersions(ctx context.Context, tx *sql.Tx, s *duet.Suite, res *duet.ApplyResult) error {
	for _, c := range storerules.SavedCases(s, res) {
		if err := saveCaseVersion(ctx, tx, c, storerules.SuiteVia(s)); err != nil {
			return err
		}
	}
	return nil
}

// withCaseVersion is fn, a save of case c, then the keeping of the version
// it saved, in one transaction.
func withCaseVersion(ctx context.Context, c *duet.Case, via duet.CaseSaveVia, fn func(*sql.Tx) error) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return saveCaseVersion(ctx, tx, c, via)
	}
}

func saveCaseVersion(ctx context.Context, tx *sql.Tx, c *duet.Case, via duet.CaseSaveVia) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO case_versions (case_id, version, title, source, source_hash, saved_by, saved_at, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.Version, c.Title, c.Source, c.SourceHash, c.CreatedBy, micros(c.UpdatedAt), via)
	return mapErr(err)
}

// FindCaseVersions implements duet.CaseVersionStore.
func (d *DB) FindCaseVersions(ctx context.Context, caseID string, before, limit int) ([]*duet.CaseVersion, bool, error) {
	limit = storerules.ClampLimit(limit, 50, 200)
	if before <= 0 {
		before = int(^uint32(0) >> 1)
	}
	rows, err := d.q.QueryContext(ctx, `SELECT version, title, source_hash, saved_by, saved_at, via FROM case_versions
		WHERE case_id = ? AND version < ? ORDER BY version DESC LIMIT ?`, caseID, before, limit+1)
	if err != nil {
		return nil, false, mapErr(err)
	}
	defer rows.Close()
	out := []*duet.CaseVersion{}
	for rows.Next() {
		v := &duet.CaseVersion{CaseID: caseID}
		var at int64
		if err := rows.Scan(&v.Version, &v.Title, &v.SourceHash, &v.SavedBy, &at, &v.Via); err != nil {
			return nil, false, mapErr(err)
		}
		v.SavedAt = fromMicros(at)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, false, mapErr(err)
	}
	more := len(out) > limit
	return out[:min(len(out), limit)], more, nil
}

// FindCaseVersion implements duet.CaseVersionStore.
func (d *DB) FindCaseVersion(ctx context.Context, caseID string, version int) (*duet.CaseVersion, error) {
	v := &duet.CaseVersion{CaseID: caseID, Version: version}
	var at int64
	err := d.q.QueryRowContext(ctx, `SELECT title, source, source_hash, saved_by, saved_at, via FROM case_versions WHERE case_id = ? AND version = ?`, caseID, version).
		Scan(&v.Title, &v.Source, &v.SourceHash, &v.SavedBy, &at, &v.Via)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "case %s has no version %d kept", caseID, version)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	v.SavedAt = fromMicros(at)
	return v, nil
}
