package cli

import (
	"strings"
	"testing"
)

func TestExposureWarning(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8420":     "",
		"127.0.0.2:8420":     "",
		"[::1]:8420":         "",
		"localhost:8420":     "",
		":8420":              "every network interface",
		"0.0.0.0:8420":       "every network interface",
		"[::]:8420":          "every network interface",
		"10.1.2.3:8420":      "on 10.1.2.3",
		"duet.internal:8420": "on duet.internal",
	} {
		got := exposureWarning(addr)
		if want == "" && got != "" || want != "" && (!strings.Contains(got, want) || !strings.Contains(got, "DUET_ALLOWED_HOSTS")) {
			t.Errorf("%s: got %q, want %q", addr, got, want)
		}
	}
}
