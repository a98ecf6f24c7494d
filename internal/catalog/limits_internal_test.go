package catalog

import (
	"testing"
	"time"
)

// TestLimitDefaults: a limit left at zero, or set below it, takes its
// default; one set above zero is kept.
func TestLimitDefaults(t *testing.T) {
	l := Limits{MaxPerCaller: -1, Timeout: 3 * time.Second, MaxResultBytes: 7}
	l.defaults()
	if l.MaxConcurrent != 64 || l.MaxPerCaller != 8 || l.IdempotencyTTL != 24*time.Hour || l.ProgressInterval != 5*time.Second {
		t.Errorf("defaults: got %+v", l)
	}
	if l.Timeout != 3*time.Second || l.MaxResultBytes != 7 {
		t.Errorf("set limits changed: got %+v", l)
	}
}
