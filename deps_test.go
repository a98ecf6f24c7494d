package duet_test

import (
	"os/exec"
	"strings"
	"testing"
)

// deps lists the packages pkg depends on, transitively.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{else}}std:{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestRootImportsOnlyTheStandardLibrary keeps the domain package free of
// dependencies: everything else depends on it, never the other way round.
func TestRootImportsOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	for _, d := range deps(t, "github.com/duet-test/duet") {
		if !strings.HasPrefix(d, "std:") && d != "github.com/duet-test/duet" {
			t.Errorf("the root package depends on %s", d)
		}
	}
}

// TestCatalogHasNoTransportOrSQL keeps the catalog transport- and
// engine-neutral.
func TestCatalogHasNoTransportOrSQL(t *testing.T) {
	t.Parallel()
	for _, d := range deps(t, "github.com/duet-test/duet/internal/catalog") {
		switch d {
		case "std:net/http", "std:database/sql", "github.com/modelcontextprotocol/go-sdk/mcp":
			t.Errorf("internal/catalog depends on %s", strings.TrimPrefix(d, "std:"))
		}
	}
}

// TestProductBinaryHasNoTestFixtures keeps the conformance fixtures (tools
// that need no credentials, a client driver) out of the product binary: only
// a build with the conformance tag has them.
func TestProductBinaryHasNoTestFixtures(t *testing.T) {
	t.Parallel()
	const fixtures = "github.com/duet-test/duet/internal/conformance"
	for _, d := range deps(t, "github.com/duet-test/duet/cmd/duet") {
		if d == fixtures {
			t.Errorf("cmd/duet depends on %s; only the conformance build may", fixtures)
		}
	}
	out, err := exec.Command("go", "list", "-tags", "conformance", "-deps", "github.com/duet-test/duet/cmd/duet").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), fixtures+"\n") {
		t.Errorf("the conformance build does not contain %s", fixtures)
	}
}
