package eval

import (
	"strings"
	"testing"
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

func FuzzRender(f *testing.F) {
	for _, s := range []string{"x", "${a}", "$${a}", "${'}'}", "${a.b[0]}", "${", "}${}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = Render(s, map[string]any{"a": map[string]any{"b": []any{1.0}}})
		_ = CheckTemplate(s, []string{"a"})
	})
}
