package compiler

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/duet-test/duet"
)

// bomb returns a suite whose http step's JSON body nests levels anchors,
// each a list of width aliases of the previous one ("billion laughs").
func bomb(levels, width int) string {
	var b strings.Builder
	b.WriteString("task: {name: t}\ncases:\n  - title: bomb\n    steps:\n      - http:\n          method: POST\n          url: http://x.test/\n          json:\n")
	b.WriteString("            l0: &l0 [" + strings.TrimSuffix(strings.Repeat("lol,", width), ",") + "]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "            l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ","))
	}
	return b.String()
}

// TestAliasBomb: the review's 600-byte alias bomb (9 levels of 9: 387
// million values expanded) is refused at the alias that goes over the
// budget, with file:line:col, without expanding it.
func TestAliasBomb(t *testing.T) {
	src := bomb(9, 9)
	if len(src) > 1000 {
		t.Fatalf("the bomb is %d bytes, want a small file", len(src))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := CompileSuite(context.Background(), []byte(src), "bomb.yaml", Options{})
	runtime.ReadMemStats(&after)
	if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(err.Error(), "bomb.yaml:13:") || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Fatalf("got %v, want INVALID_ARGUMENT at bomb.yaml:13 about aliases", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
		t.Fatalf("compiling the bomb allocated %d MiB", n>>20)
	}
	t.Log(err)
}

// TestAliasBudget: a smaller bomb that today's compiler expands (about
// 120,000 values) is refused; legitimate reuse of a block is not.
func TestAliasBudget(t *testing.T) {
	t.Parallel()
	_, err := CompileSuite(context.Background(), []byte(bomb(5, 10)), "b.yaml", Options{})
	if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(err.Error(), "b.yaml:12:") {
		t.Fatalf("5 levels of 10: got %v, want INVALID_ARGUMENT at b.yaml:12", err)
	}
	ok := `
task: {name: t}
cases:
  - title: one
    steps:
      - &login {http: {method: POST, url: "http://x.test/login", json: {user: a, password: b}}}
      - assert: "true"
  - title: two
    steps: [*login, *login, {assert: "true"}]
`
	s, err := CompileSuite(context.Background(), []byte(ok), "ok.yaml", Options{})
	if err != nil {
		t.Fatalf("reusing a step: %v", err)
	}
	if len(s.Cases[1].Steps) != 3 || s.Cases[1].Steps[1].HTTP == nil {
		t.Fatalf("reused steps: got %+v", s.Cases[1].Steps)
	}
	// Nesting through aliases counts as nesting.
	deep := "task: {name: t}\ncases:\n  - title: deep\n    steps:\n      - http:\n          method: POST\n          url: http://x.test/\n          json:\n            a: &a " +
		strings.Repeat("[", 60) + strings.Repeat("]", 60) + "\n            b: &b " + strings.Repeat("[", 50) + "*a" + strings.Repeat("]", 50) + "\n"
	if _, err := CompileSuite(context.Background(), []byte(deep), "d.yaml", Options{}); err == nil || !strings.Contains(err.Error(), "nesting too deep with *a") {
		t.Fatalf("deep through an alias: got %v", err)
	}
}

// TestAliasBombInACase: the agent compiles model-written cases with
// CompileCase, through the same YAML reader.
func TestAliasBombInACase(t *testing.T) {
	t.Parallel()
	src := strings.Replace(bomb(9, 9), "task: {name: t}\ncases:\n  - title: bomb\n    steps:\n", "title: bomb\nsteps:\n", 1)
	src = strings.ReplaceAll(src, "\n    ", "\n")
	_, err := CompileCase(context.Background(), []byte(src), &duet.Task{Name: "t"}, Options{})
	if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Fatalf("got %v, want INVALID_ARGUMENT about aliases", err)
	}
}
