package sqlite

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// saveCaseVersions keeps the version of each case of suite s that its
// apply (res) created or changed, in the apply's transaction.
func saveCaseVersions(ctx context.Context, tx *cachedTx, s *duet.Suite, res *duet.ApplyResult) error {
	for _, c := range storerules.SavedCases(s, res) {
		if err := saveCaseVersion(ctx, tx, c, storerules.SuiteVia(s)); err != nil {
			return err
		}
	}
	return nil
}

// withCaseVersion is fn, a save of case c, then the keeping of the version
// it saved, in one transaction.
func withCaseVersion(ctx context.Context, c *duet.Case, via duet.CaseSaveVia, fn func(*cachedTx) error) func(*cachedTx) error {
	return func(tx *cachedTx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return saveCaseVersion(ctx, tx, c, via)
	}
}

func saveCaseVersion(ctx context.Context, tx *cachedTx, c *duet.Case, via duet.CaseSaveVia) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO case_versions (case_id, version, title, source, source_hash, saved_by, saved_at, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.Version, c.Title, c.Source, c.SourceHash, c.CreatedBy, micros(c.UpdatedAt), via)
	return mapErr(err)
}
