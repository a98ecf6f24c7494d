package step_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/compiler"
)

// TestHTTPHeaderNames: an http step's header that is no header name is
// refused where it is written, as a route's is, not left to fail the run.
func TestHTTPHeaderNames(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h}\ncases:\n  - title: c\n    steps:\n"
	_, err := compiler.CompileSuite(t.Context(), []byte(head+"      - http: {url: /x, headers: {\"Bad Header\": v}}\n"), "t.yaml", compiler.Options{})
	if err == nil || !strings.Contains(err.Error(), `headers: "Bad Header" is not a header name`) {
		t.Errorf("a bad header name: got %v", err)
	}
	_, err = compiler.CompileSuite(t.Context(), []byte(head+"      - http: {url: /x, headers: {X-Trace: \"${run.id}\"}}\n"), "t.yaml", compiler.Options{})
	if err != nil {
		t.Errorf("a header: got %v", err)
	}
}
