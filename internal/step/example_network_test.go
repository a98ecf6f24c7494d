package step_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/secret"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/vault"
)

// TestNetworkExample runs examples/network.yaml against the sample shop
// in Chromium, as one run: every case passes — the one that signs in and
// saves the session, the ones that start from it, and each mocked API.
func TestNetworkExample(t *testing.T) {
	t.Parallel()
	runNetworkExample(t, app.NewBrowser(pool(t)))
}

// TestNetworkExampleRemoteBrowser runs the suite in a Chromium started
// separately, attached over the DevTools protocol: the routes, the
// request log and the sessions on the remote-browser path.
func TestNetworkExampleRemoteBrowser(t *testing.T) {
	t.Parallel()
	pool(t)
	chrome := chromiumtest.Start(t, func(dir string) []string { return browser.CommandLine(dir, 0) })
	remote := browser.NewPool(browser.Options{Remote: &browser.Remote{URL: chrome.WS}, MaxBrowsers: 1})
	t.Cleanup(remote.Close)
	runNetworkExample(t, app.NewBrowser(remote))
}

func runNetworkExample(t *testing.T, b engine.Browser) {
	t.Helper()
	base := sampletest.Shop(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "network.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), "http://127.0.0.1:8431", base, 1))
	root, err := os.OpenRoot(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	suite, err := compiler.CompileSuite(t.Context(), src, "network.yaml", compiler.Options{Files: root.FS()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	res, err := db.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := vault.GenerateKey()
	kr, _ := vault.NewKeyring(key)
	keeper := secret.NewSessions(db, secret.New(db, func() (*vault.Keyring, error) { return kr, nil }))
	var keys []string
	for _, c := range suite.Cases {
		keys = append(keys, c.Key)
	}
	for _, x := range runCasesOn(t, b, 0, db, res, suite, "alice", keeper, keys...) {
		if x.Status != duet.StatusPassed {
			t.Errorf("%s: got %s", x.CaseKey, describe(x))
		}
	}
}
