package storerules

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
)

// SavedCases are the cases of suite s whose apply (res) created them or
// wrote a new version of them: those whose versions it keeps.
func SavedCases(s *duet.Suite, res *duet.ApplyResult) []*duet.Case {
	saved := map[string]bool{}
	for _, r := range res.Cases {
		if r.Action == duet.ApplyCreated || r.Action == duet.ApplyUpdated {
			saved[r.Key] = true
		}
	}
	var out []*duet.Case
	for _, c := range s.Cases {
		if saved[c.Key] {
			out = append(out, c)
		}
	}
	return out
}

// SuiteVia is how the case versions an apply of s writes were saved.
func SuiteVia(s *duet.Suite) duet.CaseSaveVia {
	if s.Via == "" {
		return duet.SavedByApply
	}
	return s.Via
}

// CaseVersions is the read side of duet.CaseVersionStore on an engine.
type CaseVersions struct{ E Engine }

// FindCaseVersions implements duet.CaseVersionStore.
func (s CaseVersions) FindCaseVersions(ctx context.Context, caseID string, before, limit int) ([]*duet.CaseVersion, bool, error) {
	limit = ClampLimit(limit, 50, 200)
	if before <= 0 {
		before = int(^uint32(0) >> 1)
	}
	out, err := All(ctx, s.E, func(r Row) (*duet.CaseVersion, error) {
		v := &duet.CaseVersion{CaseID: caseID}
		return scanned(v, r.Scan(&v.Version, &v.Title, &v.SourceHash, &v.SavedBy, TimeOf(&v.SavedAt), &v.Via))
	}, `SELECT version, title, source_hash, saved_by, saved_at, via FROM case_versions
		WHERE case_id = $1 AND version < $2 ORDER BY version DESC LIMIT $3`, caseID, before, limit+1)
	if err != nil {
		return nil, false, err
	}
	more := len(out) > limit
	return out[:min(len(out), limit)], more, nil
}

// FindCaseVersion implements duet.CaseVersionStore.
func (s CaseVersions) FindCaseVersion(ctx context.Context, caseID string, version int) (*duet.CaseVersion, error) {
	v := &duet.CaseVersion{CaseID: caseID, Version: version}
	err := s.E.Read(ctx, []any{&v.Title, &v.Source, &v.SourceHash, &v.SavedBy, TimeOf(&v.SavedAt), &v.Via},
		`SELECT title, source, source_hash, saved_by, saved_at, via FROM case_versions WHERE case_id = $1 AND version = $2`, caseID, version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "case %s has no version %d kept", caseID, version)
	} else if err != nil {
		return nil, err
	}
	return v, nil
}
