package browser

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill the browser when the thread that
// started it exits (chromedp starts it from a locked thread), as chromedp
// does when no ModifyCmdFunc replaces its setting.
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = new(syscall.SysProcAttr)
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
