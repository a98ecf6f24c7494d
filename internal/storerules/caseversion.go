package storerules

import "github.com/duet-test/duet"

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
