package eval

import (
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src      string
		known    []string
		wantBool bool
		wantErr  string
	}{
		{"resp.status == 200", []string{"resp"}, true, ""},
		{"order.structuredContent.status == page", []string{"order", "page"}, true, ""},
		{"len(items) > 0 && all(items, {.ok})", []string{"items"}, true, ""},
		{"task.baseUrl != ''", nil, true, ""},
		{"missing == 1", []string{"resp"}, true, "unknown name missing"},
		{"resp.status ==", []string{"resp"}, true, "unexpected"},
		{"1 + 2", nil, true, "expected bool"},
		{"", nil, false, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			err := Check(tt.src, tt.known, tt.wantBool)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	vars := map[string]any{
		"order": map[string]any{"structuredContent": map[string]any{"status": "paid", "total": 1250.0}},
		"n":     3.0,
	}
	tests := []struct {
		in   string
		want any
	}{
		{"plain", "plain"},
		{"${n}", 3.0},
		{"id-${n}", "id-3"},
		{"${order.structuredContent.status}", "paid"},
		{"status=${ order.structuredContent.status } total=${order.structuredContent.total / 100}", "status=paid total=12.5"},
		{"$${literal}", "${literal}"},
		{`${"}" + "x"}`, "}x"},
		{"${{'a': 1}}", map[string]any{"a": 1}},
	}
	for _, tt := range tests {
		got, err := Render(tt.in, vars)
		if err != nil {
			t.Fatalf("Render(%q): %v", tt.in, err)
		}
		if Stringify(got) != Stringify(tt.want) {
			t.Errorf("Render(%q): got %#v, want %#v", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"${n", "${'x}", "${nope}"} {
		if _, err := Render(bad, vars); err == nil {
			t.Errorf("Render(%q): got nil error", bad)
		}
	}
}

func TestCheckTemplate(t *testing.T) {
	t.Parallel()
	if err := CheckTemplate("/orders/${id}", []string{"id"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckTemplate("/orders/${idd}", []string{"id"}); err == nil || !strings.Contains(err.Error(), "idd") {
		t.Fatalf("got %v, want unknown name idd", err)
	}
}

// fuzzVars are the variables the fuzz targets evaluate over.
func fuzzVars() map[string]any {
	return map[string]any{
		"a": map[string]any{"b": []any{1.0, "x", nil, true}, "c": map[string]any{"d": "e"}},
		"s": "hello, world", "n": 3.0, "l": []any{3.0, 1.0, 2.0},
	}
}

// slow is how long one fuzzed evaluation may take: the budget's MaxDuration
// plus room for a loaded machine.
const slow = 10 * MaxDuration

func FuzzRender(f *testing.F) {
	for _, s := range []string{"x", "${a}", "$${a}", "${'}'}", "${a.b[0]}", "${", "}${}{", "a${s}b${n}c",
		"${repeat(s, 100000)}${s}", "${map(1..3, [#, s])}", "${{'k': l}}-${l}", "${`x`}${\"y\"}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		_, err := Render(s, fuzzVars())
		if err != nil && err.Error() == "" {
			t.Fatalf("Render(%q): empty error", s)
		}
		_, _ = RenderString(s, fuzzVars())
		_, _ = RenderValue(map[string]any{"k": []any{s, s}}, fuzzVars())
		_ = CheckTemplate(s, []string{"a"})
		if d := time.Since(start); d > 3*slow {
			t.Fatalf("Render(%q) took %s", s, d)
		}
	})
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"1 + 2", "a.b[0] + n", "s + s", "len(s) > 3 && a.c.d == 'e'", "map(l, # * 2)", "filter(l, # > 1)",
		"reduce(l, #acc + #, 0)", "sortBy(l, -#)", "groupBy(l, # > 1)", "uniq(concat(l, l))", "toJSON(a)",
		"fromJSON(toJSON(a)).c", "split(s, ', ')", "join(['a', 'b'], '-')", "replace(s, 'l', 'L')",
		"repeat(repeat('a', 999999), 5000)", "let x = s + s; x + x", "1..10", "n..1", "'a' + 1",
		"all(1..100000, all(1..100000, true))", "uniq(map(1..100000, [#]))", "string(a)", "[a, a, [a]]",
		"{'k': l, 'm': {'n': n}}", "l | map(# + 1) | sum()", "find(l, # == 2) ?? 0", "a?.x?.y",
		"$env", "trim(s)[1:3]", "max(l) - min(l)", "median(l)", "flatten([l, [l]])", "take(l, 2)",
		"date('2024-01-02').Year()", "duration('1h') > duration('1m')", "s matches 'h.*'",
		"if n > 1 { 'a' } else { 'b' }", "let f = 1; f + n", "count(l, # > 1)", "toBase64(s)",
	} {
		f.Add(s)
	}
	known := []string{"a", "s", "n", "l"}
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		checkErr := Check(src, known, false)
		v, err := Eval(src, fuzzVars())
		if checkErr != nil && err == nil {
			t.Fatalf("Check(%q) failed (%v) but Eval succeeded (%v): what compiles must be what runs", src, checkErr, v)
		}
		if err != nil && err.Error() == "" {
			t.Fatalf("Eval(%q): empty error", src)
		}
		_, _ = EvalBool(src, fuzzVars())
		if d := time.Since(start); d > 2*slow {
			t.Fatalf("Eval(%q) took %s", src, d)
		}
	})
}
