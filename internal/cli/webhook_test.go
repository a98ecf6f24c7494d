package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWebhookCommands: duet webhook add, list, deliveries, redeliver and
// remove over the service's webhook operations, on this machine and
// against a server, whose deliverer sends the failed run's run.finished
// to the receiver, and a redelivery again.
func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	got := make(chan string, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Content-Type")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	os.WriteFile(suite, []byte(remoteFailing), 0o600)

	local := newHome(t)
	local.env["DUET_NET_ALLOW"] = "127.0.0.1"
	server := newHome(t)
	server.env["DUET_NET_ALLOW"] = "127.0.0.1"
	url := serveFor(t, server)
	token := strings.TrimSpace(server.must(0, "token", "create", "--as", "alice", "--name", "cli"))
	remote := &duetHome{t: t, env: map[string]string{
		"DUET_HOME": filepath.Join(t.TempDir(), "unused"), "XDG_CONFIG_HOME": t.TempDir(),
		"DUET_SERVER_URL": url, "DUET_TOKEN": token, "DUET_LOG_LEVEL": "warn",
	}}
	idRe := regexp.MustCompile(`webhook (\S+) "ci"`)
	deliveryRe := regexp.MustCompile(`(?m)^(\S+)\s+run\.finished\s+\S+\s+(\S+)`)
	for _, mode := range []struct {
		name string
		h    *duetHome
	}{{"local", local}, {"remote", remote}} {
		mode.h.must(0, "apply", "-f", suite)
		out := mode.h.must(0, "webhook", "add", "remote-bad", "--name", "ci", "--url", recv.URL, "--event", "run.finished")
		m := idRe.FindStringSubmatch(out)
		if m == nil || !strings.Contains(out, "signing secret (shown this once") {
			t.Fatalf("%s: webhook add: %s", mode.name, out)
		}
		id := m[1]
		if out := mode.h.must(0, "webhook", "list", "remote-bad"); !strings.Contains(out, id) || !strings.Contains(out, recv.URL) || strings.Contains(out, "secret") {
			t.Errorf("%s: webhook list: %s", mode.name, out)
		}
		if out := mode.h.must(0, "webhook", "deliveries", id); !strings.Contains(out, "has no deliveries") {
			t.Errorf("%s: deliveries before a run: %s", mode.name, out)
		}
		mode.h.must(1, "run", "remote-bad")
		if mode.name == "remote" { // the server's deliverer sends it
			for range 2 {
				select {
				case <-got:
				case <-time.After(time.Minute):
					t.Fatalf("remote: no delivery reached the receiver")
				}
				var d []string
				for d == nil || d[2] != "delivered" { // the deliverer records the answer after it
					d = deliveryRe.FindStringSubmatch(mode.h.must(0, "webhook", "deliveries", id))
					if d == nil {
						t.Fatalf("remote: no run.finished delivery listed")
					}
					if d[2] != "delivered" {
						time.Sleep(20 * time.Millisecond) // not to hammer the server while it records the answer
					}
				}
				if out := mode.h.must(0, "webhook", "redeliver", d[1]); !strings.Contains(out, "queued (run.finished of "+d[1]+")") {
					t.Errorf("remote: redeliver: %s", out)
				}
			}
		} else if d := deliveryRe.FindStringSubmatch(mode.h.must(0, "webhook", "deliveries", id)); d == nil {
			t.Errorf("local: the run's delivery is not listed")
		}
		mode.h.must(0, "webhook", "remove", id)
		if out := mode.h.must(0, "webhook", "list", "remote-bad"); !strings.Contains(out, "has no webhooks") {
			t.Errorf("%s: after remove: %s", mode.name, out)
		}
	}
}
