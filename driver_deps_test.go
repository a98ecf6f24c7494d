package duet_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyTheWiringImportsADriver keeps the store engines behind duet.Store:
// internal/app opens the engine the configuration selects and hands the
// interface to everything else, so no package above the drivers names one
// (test files may: they open a store to test against).
func TestOnlyTheWiringImportsADriver(t *testing.T) {
	t.Parallel()
	const mod = "github.com/duet-test/duet/"
	drivers := []string{mod + "internal/sqlite", mod + "internal/postgres"}
	allowed := func(pkg string) bool {
		switch pkg {
		case mod + "internal/app", mod + "internal/app/pgtrips":
			// The wiring, and beside it the round-trip benchmark, which
			// boots the app on PostgreSQL and counts the driver's round
			// trips with its tracer (postgres.Track).
			return true
		}
		for _, d := range drivers {
			if pkg == d || strings.HasPrefix(pkg, d+"/") {
				return true // a driver and its helpers
			}
		}
		return false
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || allowed(f[0]) {
			continue
		}
		checked++
		for _, imp := range f[1:] {
			for _, d := range drivers {
				if imp == d || strings.HasPrefix(imp, d+"/") {
					t.Errorf("%s imports the store driver %s: take a duet.Store instead (internal/app opens the engine)", f[0], imp)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages: is go list working?", checked)
	}
}
