package eval

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/google/go-cmp/cmp"
)

// allocated returns the bytes f allocated (the test must not run in
// parallel with others for the figure to mean something).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// evalNoClock is Eval with the time limit out of the way (a loaded machine,
// the race detector), so that the size and step limits are what the test
// sees.
func evalNoClock(src string, vars map[string]any) (any, error) {
	m := newMeter()
	m.lim.duration, m.deadline = time.Hour, time.Now().Add(time.Hour)
	return m.eval(src, vars, false)
}

// evalFewSteps is evalNoClock with a step limit of 50,000, which the race
// detector reaches quickly; the code path is that of the real limit.
func evalFewSteps(src string, vars map[string]any) (any, error) {
	m := newMeter()
	m.lim.duration, m.deadline = time.Hour, time.Now().Add(time.Hour)
	m.lim.steps = 50_000
	return m.eval(src, vars, false)
}

// TestBudgetRefusesBeforeAllocating evaluates expressions that would build
// far more than a value may hold: each is refused with ErrBudget, and the
// evaluation allocates a few megabytes at most, not what the expression asks
// for. Not parallel: it measures the allocations of the process.
func TestBudgetRefusesBeforeAllocating(t *testing.T) {
	s := strings.Repeat("x", 1<<20)
	list := make([]any, 20)
	for i := range list {
		list[i] = s
	}
	many := make([]any, 100000)
	for i := range many {
		many[i] = "xxxxxxxxxxxxxxxx"
	}
	vars := map[string]any{"s": s, "n": 5000.0, "list": list, "many": many}
	tests := []struct {
		name, src string
		want      string // in the error message
	}{
		// The security review's reproduction (5 GB on today's code).
		{"nested repeat", "repeat(repeat('a', 999999), 5000)", "repeat would build"},
		{"repeat of a variable", "repeat(s, n)", "repeat would build"},
		{"repeat 50 MB", "repeat(repeat('a', 999999), 50)", "repeat would build"},
		{"doubling with +", "let a = s + s; let b = a + a; let c = b + b; let d = c + c; let e = d + d; e + e", "+ would build"},
		{"replace", "replace(repeat('a', 100000), 'a', repeat('b', 1000))", "replace would build"},
		{"join glue", "join(map(1..200, ''), s)", "join would build"},
		{"map of a shared value", "map(1..1000, s)", "in total"},
		{"list literal of a shared value", "let a = [s, s, s, s, s, s, s, s, s, s]; [a, a, a, a, a, a, a, a, a, a]", "builds a value of more than 16 MiB"},
		{"toJSON indents", "toJSON([s, s, s, s, s, s, s, s])", "toJSON would build"},
		{"split into runes", "split(repeat(s, 15), '')", "split would build"},
		{"concat of itself", "concat(many, many, many, many, many, many, many, many, many, many, many, many)", "concat of its arguments would build"},
		{"range", "1..100000000", ".. would build"},
		{"string of a large list", "string(list)", "string would build"},
		{"template of a large list", "'x' + string(list)", "string would build"},
		{"reduce doubling", "reduce(1..40, concat(#acc, #acc), [s])", "would build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = evalNoClock(tt.src, vars) })
			if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Eval(%s): got error %v, want one wrapping ErrBudget with %q", tt.src, err, tt.want)
			}
			t.Logf("%s: %v (allocated %.1f MiB)", tt.src, err, float64(n)/(1<<20))
			if n > 80<<20 {
				t.Errorf("Eval(%s) allocated %d MiB before refusing, want at most 80", tt.src, n>>20)
			}
		})
	}
}

// TestBudgetBoundsTime: loops that would run for hours stop at the step or
// time limit.
func TestBudgetBoundsTime(t *testing.T) {
	t.Parallel()
	vars := map[string]any{"s": strings.Repeat("ab", 4<<20)}
	tests := []struct {
		name, src, want string
		eval            func(string, map[string]any) (any, error)
	}{
		{"nested loops", "let r = 1..100000; all(r, all(r, true))", "steps", evalFewSteps},
		{"quadratic uniq", "uniq(map(1..10000, [#]))", "steps", evalFewSteps},
		{"slow steps", "all(1..100000, indexOf(s, 'c') < 0)", "longer than", Eval},
		{"slow steps, nested", "let r = 1..100000; all(r, all(r, true))", "", Eval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := tt.eval(tt.src, vars)
			if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Eval(%s): got %v, want a budget error with %q", tt.src, err, tt.want)
			}
			// The steps are cheap: even the race detector on a loaded machine
			// gets there within the time limit's order of magnitude.
			if d := time.Since(start); d > 20*MaxDuration {
				t.Errorf("Eval(%s) took %s, want about %s at most", tt.src, d, MaxDuration)
			}
		})
	}
}

func TestBudgetTemplates(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3<<20)
	vars := map[string]any{"big": big, "list": []any{big, big}}
	tmpl := strings.Repeat("${big}", 6) // 18 MiB of text
	if _, err := Render(tmpl, vars); !errors.Is(err, ErrBudget) {
		t.Fatalf("Render of 6 × 3 MiB: got %v, want ErrBudget", err)
	}
	if _, err := RenderString("${[list, list, list]}", vars); !errors.Is(err, ErrBudget) {
		t.Fatalf("RenderString of a shared list: got %v, want ErrBudget", err)
	}
	leaves := map[string]any{}
	for i := range 8 {
		leaves[fmt.Sprint(i)] = "${big}"
	}
	if _, err := RenderValue(leaves, vars); !errors.Is(err, ErrBudget) {
		t.Fatalf("RenderValue with 8 × 3 MiB leaves: got %v, want ErrBudget", err)
	}
	// Within the budget, a large existing value is passed through.
	if v, err := Render("${big}", vars); err != nil || v != big {
		t.Fatalf("Render(${big}): got %d bytes, %v", len(fmt.Sprint(v)), err)
	}
	if v, err := RenderString("a${big}b", vars); err != nil || len(v) != len(big)+2 {
		t.Fatalf("RenderString(a${big}b): got %d bytes, %v", len(v), err)
	}
}

// TestGuardsKeepSemantics runs expressions with and without the guards and
// compares the results: the budget changes what is refused, nothing else.
func TestGuardsKeepSemantics(t *testing.T) {
	t.Parallel()
	vars := map[string]any{
		"items": []any{
			map[string]any{"id": 1.0, "ok": true, "tag": "a"},
			map[string]any{"id": 2.0, "ok": false, "tag": "b"},
			map[string]any{"id": 3.0, "ok": true, "tag": "a"},
		},
		"s": "a,b,,c", "n": 3.0, "m": map[string]any{"k": "v", "l": []any{1.0, 2.0}},
	}
	for _, src := range []string{
		"map(items, .id * 2)", "filter(items, .ok)", "reduce(items, #acc + #.id, 0)",
		"reduce(1..5, #acc + string(#), '')", "sortBy(items, -.id)", "groupBy(items, .tag)",
		"'x' + s + 'y'", "1 + 2", "n + 1", "1.5 + n", "1..5", "n..5", "len(1..0)",
		"uniq([1, 1.0, 'a', 'a', [1], [1], nil, nil, true, true, 2])", "uniq(map(items, .tag))",
		"join(split(s, ','), '-')", "split(s, '', 3)", "splitAfter(s, ',')", "replace(s, ',', ';;')",
		"replace(s, ',', '', 1)", "repeat('ab', n)", "toJSON(m)", "fromJSON(toJSON(m)).l[1]",
		"string(m)", "concat([1], [2, 3], m.l)", "flatten([[1, [2]], 3])", "max(1, 2, [3, 4])",
		"median([1, 5, 3])", "mean(1, 2)", "upper(s)", "sort(keys(m))", "count(items, .ok)",
		"sum(items, .id)", "find(items, .id > 1).tag", "any(items, !.ok)", "one(items, .id == 2)",
		"{'a': [1, 2], 'b': {'c': n}}", "[1, 'a', [s]]", "first(items).id", "take(items, 2)",
		"reverse(1..3)", "sort([3, 1, 2])", "len(s) > 1 ? 'long' : 'short'",
		"let x = 1..3; map(x, # + len(x))", "items | filter(.ok) | map(.tag) | join(',')",
		"trim('  a  ')", "toBase64('hi') + fromBase64('aGk=')", "'a' in ['a']",
		"abs(-n)", "int('5') + float('1.5')", "type(m)", "indexOf(s, 'b')", "hasPrefix(s, 'a')",
	} {
		want, werr := expr.Eval(src, vars)
		got, gerr := Eval(src, vars)
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%s: error %v, want %v", src, gerr, werr)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-unguarded +guarded):\n%s", src, diff)
		}
	}
}

// TestGuardsKeepCompileErrors: type errors the checker finds are still
// found at compile time (the compiler reports them with a position).
func TestGuardsKeepCompileErrors(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"'a' + 1", "1..'b'", "filter([1], 1)", "repeat(1, 2)", "len(1, 2)", "true + true"} {
		if err := Check(src, nil, false); err == nil {
			t.Errorf("Check(%s): got nil, want a compile error", src)
		}
	}
	if err := Check("1 + 2", nil, true); err == nil || !strings.Contains(err.Error(), "expected bool") {
		t.Errorf("Check(1 + 2, bool): got %v, want expected bool", err)
	}
}

// TestGuardNamesAreNotCallable: the guard functions cannot be called by an
// expression (their names are not identifiers).
func TestGuardNamesAreNotCallable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{fnStep, fnValue, fnAdd, fnRange} {
		if _, err := Eval(name+"(1, 2)", nil); err == nil {
			t.Errorf("Eval(%s(1, 2)): got nil error", name)
		}
	}
}

// TestBudgetLeavesLegitimateWork: loops over large existing values and
// literals written out in the source stay well within the budget.
func TestBudgetLeavesLegitimateWork(t *testing.T) {
	t.Parallel()
	items := make([]any, 30000)
	for i := range items {
		items[i] = map[string]any{"id": float64(i), "tag": "t" + fmt.Sprint(i%7)}
	}
	vars := map[string]any{"items": items, "body": strings.Repeat("y", 10<<20)}
	// 60 tags of about 40 characters: about 80 MB if measured at each
	// iteration.
	tags := []string{"'t1'", "'t2'", "'t3'", "'t4'", "'t5'", "'t6'"}
	for i := range 54 {
		tags = append(tags, fmt.Sprintf("'other-%03d-%s'", i, strings.Repeat("z", 30)))
	}
	for src, want := range map[string]any{
		"count(items, .tag in [" + strings.Join(tags, ", ") + "])": 25714,
		"len(filter(items, int(.id) % 2 == 0))":                    15000,
		"len(body + '!')":                                          10<<20 + 1,
		"len(toJSON(take(items, 1000))) > 1000":                    true,
		"sum(map(items, .id)) == 449985000":                        true,
		"len(uniq(map(items, .tag)))":                              7,
		"len(get({'a': items}, 'a'))":                              30000,
		"last(sortBy(items, -.id)).id":                             0.0,
		"len(groupBy(items, .tag)['t3'])":                          4286,
		"reduce(items, #acc + .id, 0) > 0":                         true,
		"len(join(map(take(items, 1000), .tag)))":                  2000,
	} {
		got, err := evalNoClock(src, vars)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if !cmp.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", src, got, want)
		}
	}
}
