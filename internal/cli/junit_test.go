package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestRunJUnitAttachments: `duet run --junit FILE` writes, beside FILE,
// junit-attachments/ with the failed case's failure screenshot and trace,
// named in its system-out — on this machine (report.WriteJUnitFiles) and
// against a server (its JUnit zip, unpacked), the same files.
func TestRunJUnitAttachments(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	os.WriteFile(suite, []byte(`
task: {name: attached, baseURL: `+sampletest.Shop(t)+`}
cases:
  - key: loads
    title: Orders load
    steps:
      - open: /evidence/orders
      - assertText: {selector: "#load-state", equals: never-this}
`), 0o600)

	local := newHome(t)
	server := newHome(t)
	url := serveFor(t, server)
	token := strings.TrimSpace(server.must(0, "token", "create", "--as", "alice", "--name", "ci"))
	remote := &duetHome{t: t, env: map[string]string{
		"DUET_HOME": filepath.Join(t.TempDir(), "unused"), "XDG_CONFIG_HOME": t.TempDir(),
		"DUET_SERVER_URL": url, "DUET_TOKEN": token, "DUET_LOG_LEVEL": "warn",
	}}
	attachment := regexp.MustCompile(`\[\[ATTACHMENT\|(junit-attachments/[^\]]+)\]\]`)
	for _, mode := range []struct {
		name string
		h    *duetHome
	}{{"local", local}, {"remote", remote}} {
		mode.h.must(0, "apply", "-f", suite)
		dir := t.TempDir()
		junit := filepath.Join(dir, "duet-junit.xml")
		out := mode.h.must(1, "run", "attached", "--trace", "on-failure", "--junit", junit)
		if !strings.Contains(out, "wrote the junit report to "+junit+" (2 attachments of its failed cases in "+filepath.Join(dir, "junit-attachments")+")") {
			t.Errorf("%s: %s", mode.name, out)
		}
		xml, err := os.ReadFile(junit)
		if err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		names := attachment.FindAllStringSubmatch(string(xml), -1)
		var png, trace bool
		for _, m := range names {
			fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(m[1])))
			if err != nil || fi.Size() == 0 {
				t.Errorf("%s: %s named in the XML: %v", mode.name, m[1], err)
			}
			png = png || strings.HasSuffix(m[1], ".png")
			trace = trace || strings.HasSuffix(m[1], "/trace.zip")
		}
		if !png || !trace {
			t.Errorf("%s: want a screenshot and a trace named in the XML, got %q\n%s", mode.name, names, xml)
		}
	}
}
