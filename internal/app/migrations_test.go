package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMigrationsAreNumberedAlike: each schema change has one migration per
// engine under the same number (docs/architecture.md), so `duet migrate
// status` means the same on both.
func TestMigrationsAreNumberedAlike(t *testing.T) {
	t.Parallel()
	versions := func(engine string) []string {
		entries, err := os.ReadDir(filepath.Join("..", engine, "migrations"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if v, _, ok := strings.Cut(e.Name(), "_"); ok && strings.HasSuffix(e.Name(), ".sql") {
				out = append(out, v)
			}
		}
		return out
	}
	lite, pg := versions("sqlite"), versions("postgres")
	if len(lite) < 9 || !slices.Equal(lite, pg) {
		t.Errorf("migration numbers differ:\nsqlite   %v\npostgres %v", lite, pg)
	}
}
