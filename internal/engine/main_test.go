package engine_test

import (
	"os"
	"testing"
)

// TestMain closes the browser pool that the browser tests share, so that no
// Chromium process outlives the test binary.
func TestMain(m *testing.M) {
	code := m.Run()
	if p := shared.pool; p != nil {
		p.Close()
	}
	os.Exit(code)
}
