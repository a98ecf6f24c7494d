package app_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNothingBelowImportsTheWiring: the wiring sits above what it puts
// together, so no package it builds on — nor a package under one of
// them, such as a test helper (api/apitest was one) — imports
// internal/app; a helper that starts the whole app lives beside it
// (internal/app/apptest).
func TestNothingBelowImportsTheWiring(t *testing.T) {
	t.Parallel()
	const mod = "github.com/duet-test/duet"
	const wiring = mod + "/internal/app"
	deps, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", wiring).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var below []string
	for p := range strings.Lines(string(deps)) {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, mod+"/") && p != wiring {
			below = append(below, p)
		}
	}
	if len(below) < 10 {
		t.Fatalf("the wiring builds on %d packages of the module: is go list working?", len(below))
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		for _, imp := range f[1:] {
			if imp != wiring {
				continue
			}
			for _, b := range below {
				if f[0] == b || strings.HasPrefix(f[0], b+"/") {
					t.Errorf("%s imports the wiring from below (it is, or is under, %s, which internal/app builds on): move it beside internal/app", f[0], b)
					break
				}
			}
		}
	}
}
