package duet

import "testing"

func TestFormatMs(t *testing.T) {
	for _, c := range []struct {
		ms       int64
		decimals int
		want     string
	}{
		{0, 2, "0 ms"},
		{85, 1, "85 ms"},
		{999, 2, "999 ms"},
		{1000, 2, "1.00 s"},
		{1234, 2, "1.23 s"},
		{1234, 1, "1.2 s"},
		{59_999, 1, "60.0 s"},
		{60_000, 2, "1 min 0 s"},
		{125_400, 1, "2 min 5 s"},
		{3_725_000, 2, "62 min 5 s"},
	} {
		if got := FormatMs(c.ms, c.decimals); got != c.want {
			t.Errorf("FormatMs(%d, %d) = %q, want %q", c.ms, c.decimals, got, c.want)
		}
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct {
		s    string
		most int
		want string
	}{
		{"Checkout: pay with a card!", 60, "checkout-pay-with-a-card"},
		{"  --Grüße 2 you--  ", 60, "gr-e-2-you"},
		{"注文", 60, ""},
		{"abcdef ghij", 6, "abcdef"},
		{"abcde fghij", 6, "abcde"}, // cut after the dash, which goes
		{"ab cd ef", 7, "ab-cd-e"},
	} {
		if got := Slug(c.s, c.most); got != c.want {
			t.Errorf("Slug(%q, %d) = %q, want %q", c.s, c.most, got, c.want)
		}
	}
}
