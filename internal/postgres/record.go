package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"
)

// A statement that reads an object and the objects that go with it in one
// round trip returns each of those as a row value — ROW(...) for one, or
// ARRAY(SELECT ROW(...) ...) for a list — read as bytes
// (pgtype.UndecodedBytes) and scanned by the function that scans such a
// row from its own table (scanRunTotals, scanSchedule, ...): recordRow
// makes a row value look like a row.

// recordRow is a row value in PostgreSQL's binary format, scanned with the
// type map of the connection that read it.
type recordRow struct {
	m   *pgtype.Map
	src []byte
}

// Scan reads the row value's fields into dest, in order, as rows.Scan
// does; the field count must match.
func (r recordRow) Scan(dest ...any) error {
	s := pgtype.NewCompositeBinaryScanner(r.m, r.src)
	for i, d := range dest {
		if !s.Next() {
			if err := s.Err(); err != nil {
				return err
			}
			return fmt.Errorf("a row value of %d fields, %d expected", i, len(dest))
		}
		if err := r.m.Scan(s.OID(), pgtype.BinaryFormatCode, s.Bytes(), d); err != nil {
			return fmt.Errorf("field %d of a row value: %w", i, err)
		}
	}
	if s.Next() {
		return fmt.Errorf("a row value of more than %d fields", len(dest))
	}
	return s.Err()
}

// scanRecords scans each row value of recs with scan: a list read as
// ARRAY(SELECT ROW(...) ...). It returns an empty list, not nil, for none.
func scanRecords[T any](m *pgtype.Map, recs []pgtype.UndecodedBytes, scan func(rowScanner) (T, error)) ([]T, error) {
	out := make([]T, 0, len(recs))
	for _, rec := range recs {
		v, err := scan(recordRow{m, rec})
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
