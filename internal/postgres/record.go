package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// The call logs (audit, mcp_invocations) have the same shape: a time, a
// trace, five text columns, a duration and the sizes of the arguments and
// the result.

// logRow is one record of a call log.
type logRow struct {
	time       time.Time
	trace      string
	text       [5]string
	durationUs int64
	argBytes   int
	resBytes   int
}

// logInsert is the statement that inserts a batch of records into a call
// log whose five text columns are cols, in order, returning their ids.
func logInsert(table string, cols [5]string) string {
	names := strings.Join(cols[:], ", ")
	return `INSERT INTO ` + table + ` (time, trace_id, ` + names + `, duration_us, arg_bytes, result_bytes)
		SELECT x.time, x.trace_id, x.` + strings.Join(cols[:], ", x.") + `, x.duration_us, x.arg_bytes, x.result_bytes
		FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::int[], $10::int[])
			WITH ORDINALITY AS x (time, trace_id, ` + names + `, duration_us, arg_bytes, result_bytes, ord)
		ORDER BY x.ord
		RETURNING id`
}

var (
	auditLog      = logInsert("audit", [5]string{"call_source", "caller", "method", "tool", "outcome"})
	invocationLog = logInsert("mcp_invocations", [5]string{"executor", "source", "server_key", "tool", "outcome"})
)

// appendLog inserts recs into a call log with its statement insert, in
// one statement (each record's row made by row), and hands each record
// its id (setID).
func appendLog[R any](ctx context.Context, d *DB, insert string, recs []R, row func(R) logRow, setID func(R, int64)) error {
	if len(recs) == 0 {
		return nil
	}
	n := len(recs)
	times := make([]time.Time, n)
	trace := make([]string, n)
	var text [5][]string
	for c := range text {
		text[c] = make([]string, n)
	}
	dur := make([]int64, n)
	argB, resB := make([]int32, n), make([]int32, n)
	for i, r := range recs {
		l := row(r)
		times[i], trace[i], dur[i], argB[i], resB[i] = ts(l.time), l.trace, l.durationUs, int32(l.argBytes), int32(l.resBytes)
		for c := range text {
			text[c][i] = l.text[c]
		}
	}
	rows, err := d.pool.Query(ctx, insert, times, trace, text[0], text[1], text[2], text[3], text[4], dur, argB, resB)
	if err != nil {
		return mapErr(err)
	}
	return assignIDs(rows, n, func(i int, id int64) { setID(recs[i], id) })
}
