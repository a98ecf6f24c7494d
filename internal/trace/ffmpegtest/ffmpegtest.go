// Package ffmpegtest finds ffmpeg for the tests of video export.
package ffmpegtest

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of ffmpeg, or skips the test when there is none
// on PATH — unless DUET_REQUIRE_FFMPEG=1 asks for a failure instead.
func Require(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		if os.Getenv("DUET_REQUIRE_FFMPEG") == "1" {
			tb.Fatal("DUET_REQUIRE_FFMPEG=1 but no ffmpeg on PATH")
		}
		tb.Skip("skipping: no ffmpeg on PATH (set DUET_REQUIRE_FFMPEG=1 to fail instead)")
	}
	return p
}
