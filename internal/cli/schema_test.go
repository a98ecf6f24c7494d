package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestSchemaSuite: `duet schema suite` prints the suite format's JSON
// Schema, the one docs/suite.schema.json holds; it needs no database.
func TestSchemaSuite(t *testing.T) {
	t.Parallel()
	d := &duetCLI{t: t, env: map[string]string{"DUET_HOME": t.TempDir() + "/none"}}
	out := d.ok("schema", "suite")
	want, err := os.ReadFile("../../docs/suite.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("duet schema suite differs from docs/suite.schema.json (go test ./internal/compiler -run TestSuiteSchemaIsCurrent -update)")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(nil); err != nil || s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("the schema: %v, $schema %q", err, s.Schema)
	}
	if _, err := os.Stat(t.TempDir() + "/none"); err == nil {
		t.Error("duet schema suite made a DUET_HOME")
	}
	if code, _, errs := d.run("", "schema", "nope"); code != 2 || !strings.Contains(errs, "nope") {
		t.Errorf("duet schema nope: exit %d %q, want 2", code, errs)
	}
}
