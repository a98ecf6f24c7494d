package storerules

import (
	"context"
	"errors"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// VersionTable is goose's version table (its default name).
const VersionTable = "goose_db_version"

// MigrationStatus reads, through goose's own queries for dialect and
// without writing, which of srcs the database has applied and its highest
// version. A database without the version table (exists false) has none
// (version 0).
func MigrationStatus(ctx context.Context, q database.DBTxConn, dialect database.Dialect, srcs []*goose.Source, exists bool) ([]*goose.MigrationStatus, int64, error) {
	out := make([]*goose.MigrationStatus, 0, len(srcs))
	for _, s := range srcs {
		out = append(out, &goose.MigrationStatus{Source: s, State: goose.StatePending})
	}
	if !exists {
		return out, 0, nil
	}
	st, err := database.NewStore(dialect, VersionTable)
	if err != nil {
		return nil, 0, err
	}
	for _, m := range out {
		r, err := st.GetMigration(ctx, q, m.Source.Version)
		switch {
		case errors.Is(err, database.ErrVersionNotFound):
		case err != nil:
			return nil, 0, err
		case r.IsApplied:
			m.State, m.AppliedAt = goose.StateApplied, r.Timestamp
		}
	}
	v, err := st.GetLatestVersion(ctx, q)
	if errors.Is(err, database.ErrVersionNotFound) {
		return out, 0, nil
	}
	return out, v, err
}
