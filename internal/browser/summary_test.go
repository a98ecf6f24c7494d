package browser

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/duet-test/duet"
)

func testSummaryData() summaryData {
	d := summaryData{
		Title:    "Shop",
		URL:      "https://shop.example/cart",
		Headings: []summaryHeading{{Level: 1, Text: "Cart", Sel: "h1"}},
		Fields: []summaryField{
			{Type: "email", Label: "Email", Name: "email", Placeholder: "you@example.com", Required: true, Sel: "#email"},
			{Type: "checkbox", Label: "Gift", Name: "gift", Checked: true, Sel: "#gift"},
			{Type: "select", Label: "Size", Name: "size", Value: "M", Options: []string{"S", "M", "L"}, Sel: "#size"},
		},
		Buttons: []summaryButton{{Text: "Pay", Sel: "#pay"}, {Text: "Wait", Disabled: true, Sel: "button.wait"}},
		Text:    "Cart\nYour cart has 3 items. Ünïcödé text follows here and goes on.",
		Counts:  map[string]int{"links": 40},
	}
	for i := range 20 {
		d.Links = append(d.Links, summaryLink{Text: "Item " + strings.Repeat("x", i), Href: "/item/" + strings.Repeat("1", i), Sel: "a.item"})
	}
	return d
}

func TestFormatSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		max     int
		want    []string
		notWant []string
	}{
		{"roomy", 8192, []string{
			"Title: Shop\nURL: https://shop.example/cart\n",
			"Headings (1):\n  h1 \"Cart\"  css=h1\n",
			`  email "Email" name=email placeholder="you@example.com" value="" required  css=#email`,
			`  checkbox "Gift" name=gift checked  css=#gift`,
			`  select "Size" name=size value="M" options=[S, M, L]  css=#size`,
			"Buttons (2):\n  \"Pay\"  css=#pay\n  \"Wait\" disabled  css=button.wait\n",
			"Links (40):\n",
			`  "Item " -> /item/  css=a.item`,
			"  ... 20 more\n",
			"Text:\nCart\nYour cart has 3 items.",
		}, nil},
		{"tight", 600, []string{"Title: Shop\n", "Links (40):", "more", "Text:\n"}, []string{"Item xxxxxxxxxxxxxxxxxxx\""}},
		{"tiny", 45, []string{"Title: Shop\nURL: https://shop.example/cart"}, []string{"Headings"}},
		{"smaller than the title", 8, []string{"Titl..."}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := formatSummary(testSummaryData(), tt.max)
			if len(got) > tt.max {
				t.Errorf("got %d bytes, want at most %d", len(got), tt.max)
			}
			if !utf8.ValidString(got) {
				t.Errorf("got invalid UTF-8: %q", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q; got:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("summary has %q; got:\n%s", w, got)
				}
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello world", 8, "hello..."},
		{"héllo wörld", 6, "hé..."},
		{"héllo wörld", 5, "h..."},
		{"hello", 2, ".."},
		{"hello", -1, ""},
	}
	for _, tt := range tests {
		if got := truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url      string
		wantCode duet.Code
	}{
		{"http://127.0.0.1:8080/x?y=1", ""},
		{"https://example.com", ""},
		{"about:blank", ""},
		{"data:text/html,<p>hi</p>", ""},
		{"", duet.CodeInvalidArgument},
		{"/relative/path", duet.CodeInvalidArgument},
		{"http://", duet.CodeInvalidArgument},
		{"file:///etc/passwd", duet.CodeURLRefused},
		{"chrome://settings", duet.CodeURLRefused},
		{"javascript:alert(1)", duet.CodeURLRefused},
	}
	for _, tt := range tests {
		if got := duet.ErrorCode(checkURL(tt.url)); got != tt.wantCode {
			t.Errorf("checkURL(%q) code = %q, want %q", tt.url, got, tt.wantCode)
		}
	}
}
