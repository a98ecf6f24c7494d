package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// units are the systemd units of deploy/systemd.
func units(t *testing.T) []string {
	t.Helper()
	u, err := filepath.Glob("systemd/*.service")
	if err != nil || len(u) < 2 {
		t.Fatalf("units: %v %v", u, err)
	}
	return u
}

// analyze runs systemd-analyze on a copy of unit whose ExecStart names an
// executable that exists here (verify checks that the binary exists; the
// duet binary is not installed on this machine) and returns its output.
func analyze(t *testing.T, unit string, args ...string) (string, error) {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("DUET_REQUIRE_SYSTEMD") == "1" {
			t.Fatal("DUET_REQUIRE_SYSTEMD=1 but systemd-analyze is not installed (scripts/deps.sh systemd)")
		}
		t.Skip("systemd-analyze is not installed (scripts/deps.sh installs it: apt-get install systemd)")
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("ExecStart=/usr/local/bin/duet ")) {
		t.Fatalf("%s: ExecStart is not /usr/local/bin/duet", unit)
	}
	copy := filepath.Join(t.TempDir(), filepath.Base(unit))
	if err := os.WriteFile(copy, bytes.ReplaceAll(b, []byte("ExecStart=/usr/local/bin/duet "), []byte("ExecStart="+self+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, append(args, copy)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestSystemdUnitsVerify: `systemd-analyze verify` accepts every unit
// without a word: it exits 0 even for unknown keys and unparsable values,
// which it only prints, so any output fails the test.
func TestSystemdUnitsVerify(t *testing.T) {
	for _, u := range units(t) {
		out, err := analyze(t, u, "verify", "--man=no")
		if err != nil || out != "" {
			t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
		}
	}
	// The check itself catches what verify only prints.
	bad := filepath.Join(t.TempDir(), "bad.service")
	os.WriteFile(bad, []byte("[Service]\nExecStart=/usr/local/bin/duet serve\nProtectSystem=sometimes\n"), 0o644)
	if out, _ := analyze(t, bad, "verify", "--man=no"); !strings.Contains(out, "protect system") {
		t.Errorf("a bad value went unnoticed: %q", out)
	}
}

// TestSystemdUnitsExposure: `systemd-analyze security` rates each unit's
// confinement at most 2.5 on its 0 (locked down) to 10 (exposed) scale
// (2.1 with what Chromium's sandbox needs allowed).
func TestSystemdUnitsExposure(t *testing.T) {
	for _, u := range units(t) {
		out, err := analyze(t, u, "security", "--offline=true", "--no-pager", "--threshold=25")
		if err != nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", u, err, out)
		}
	}
}
