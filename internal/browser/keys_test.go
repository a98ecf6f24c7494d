package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key      string
		want     string
		wantMods []chromedp.Modifier
		wantCode duet.Code
	}{
		{"Enter", kb.Enter, nil, ""},
		{"enter", kb.Enter, nil, ""},
		{"Return", kb.Enter, nil, ""},
		{"Tab", kb.Tab, nil, ""},
		{"Escape", kb.Escape, nil, ""},
		{"Esc", kb.Escape, nil, ""},
		{"ArrowDown", kb.ArrowDown, nil, ""},
		{"Backspace", kb.Backspace, nil, ""},
		{"PageDown", kb.PageDown, nil, ""},
		{"Space", " ", nil, ""},
		{"a", "a", nil, ""},
		{"é", "é", nil, ""},
		{"+", "+", nil, ""},
		{"Shift+Tab", kb.Tab, []chromedp.Modifier{chromedp.ModifierShift}, ""},
		{"Control+Shift+a", "a", []chromedp.Modifier{chromedp.ModifierCtrl, chromedp.ModifierShift}, ""},
		{"Meta++", "+", []chromedp.Modifier{chromedp.ModifierMeta}, ""},
		{"", "", nil, duet.CodeInvalidArgument},
		{"Hyperspace", "", nil, duet.CodeInvalidArgument},
		{"Super+a", "", nil, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			t.Parallel()
			got, mods, err := parseKey(tt.key)
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseKey(%q) = %q, want %q", tt.key, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantMods, mods); diff != "" {
				t.Errorf("parseKey(%q) modifiers (-want +got):\n%s", tt.key, diff)
			}
		})
	}
}
