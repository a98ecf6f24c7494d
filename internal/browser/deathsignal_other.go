//go:build unix && !linux

package browser

import "os/exec"

// setDeathSignal: chromedp sets nothing on this system either.
func setDeathSignal(*exec.Cmd) {}
