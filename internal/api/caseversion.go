package api

import (
	"context"
	"strconv"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/linediff"
)

// CaseVersionsIn asks for a page of a case's versions, newest first, and
// optionally the diff from version From to version To (both or neither).
type CaseVersionsIn struct {
	From   int    `json:"from,omitempty"`
	To     int    `json:"to,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// CaseVersions is a page of a case's versions (without their source),
// newest first, and the diff asked for.
type CaseVersions struct {
	CaseID     string              `json:"caseId"`
	Key        string              `json:"key"`
	Current    int                 `json:"current"` // the case's version now
	Versions   []*duet.CaseVersion `json:"versions"`
	NextCursor string              `json:"nextCursor,omitempty"`
	Diff       *CaseDiff           `json:"diff,omitempty"`
}

// CaseDiff is the line diff of the sources of two versions of a case.
type CaseDiff struct {
	From    int             `json:"from"`
	To      int             `json:"to"`
	Added   int             `json:"added"`
	Removed int             `json:"removed"`
	Lines   []linediff.Line `json:"lines"`
}

// MaxCaseVersionsPage bounds a page of versions.
const MaxCaseVersionsPage = 200

// ListCaseVersions returns a page of the versions of case caseID, and the
// diff between two of them when in names them, to whoever may see the
// case (get_test_case's rule: NOT_FOUND for anyone else). Returns
// NOT_FOUND (also for a version the case does not have kept),
// INVALID_ARGUMENT.
func (s *Service) ListCaseVersions(ctx context.Context, c duet.Caller, caseID string, in CaseVersionsIn) (CaseVersions, error) {
	return govern(ctx, s, c, "listCaseVersions", in, func(ctx context.Context) (CaseVersions, error) {
		cs, err := s.d.Store.FindCaseByID(ctx, c.UserID, caseID)
		if err != nil {
			return CaseVersions{}, err
		}
		if (in.From == 0) != (in.To == 0) || in.From < 0 || in.To < 0 {
			return CaseVersions{}, duet.Errorf(duet.CodeInvalidArgument, "from and to: two version numbers, or neither")
		}
		if in.Limit < 0 || in.Limit > MaxCaseVersionsPage {
			return CaseVersions{}, duet.Errorf(duet.CodeInvalidArgument, "limit: from 1 to %d", MaxCaseVersionsPage)
		}
		before := 0
		if in.Cursor != "" {
			if before, err = strconv.Atoi(in.Cursor); err != nil || before < 2 {
				return CaseVersions{}, duet.Errorf(duet.CodeInvalidArgument, "invalid cursor")
			}
		}
		list, more, err := s.d.Store.FindCaseVersions(ctx, cs.ID, before, in.Limit)
		if err != nil {
			return CaseVersions{}, err
		}
		out := CaseVersions{CaseID: cs.ID, Key: cs.Key, Current: cs.Version, Versions: list}
		if more && len(list) > 0 {
			out.NextCursor = strconv.Itoa(list[len(list)-1].Version)
		}
		if in.From != 0 {
			if out.Diff, err = s.caseDiff(ctx, cs.ID, in.From, in.To); err != nil {
				return CaseVersions{}, err
			}
		}
		return out, nil
	})
}

func (s *Service) caseDiff(ctx context.Context, caseID string, from, to int) (*CaseDiff, error) {
	a, err := s.d.Store.FindCaseVersion(ctx, caseID, from)
	if err != nil {
		return nil, err
	}
	b, err := s.d.Store.FindCaseVersion(ctx, caseID, to)
	if err != nil {
		return nil, err
	}
	d := &CaseDiff{From: from, To: to, Lines: linediff.Diff(a.Source, b.Source)}
	d.Added, d.Removed = linediff.Count(d.Lines)
	return d, nil
}

// GetCaseVersion returns one version of case caseID with its source, to
// whoever may see the case (NOT_FOUND for anyone else, and for a version
// not kept).
func (s *Service) GetCaseVersion(ctx context.Context, c duet.Caller, caseID string, version int) (*duet.CaseVersion, error) {
	return govern(ctx, s, c, "getCaseVersion", map[string]any{"caseId": caseID, "version": version}, func(ctx context.Context) (*duet.CaseVersion, error) {
		cs, err := s.d.Store.FindCaseByID(ctx, c.UserID, caseID)
		if err != nil {
			return nil, err
		}
		return s.d.Store.FindCaseVersion(ctx, cs.ID, version)
	})
}
