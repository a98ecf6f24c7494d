package app_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/config"
)

// TestWorkerServesMetricsAndProbes: `duet worker` with DUET_METRICS=host:port
// serves /metrics there, and /healthz and /readyz for an orchestrator's
// probes (a worker serves no other HTTP), whatever Host the prober sends.
func TestWorkerServesMetricsAndProbes(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DUET_HOME": t.TempDir(), "DUET_METRICS": "127.0.0.1:0", "DUET_LOG_LEVEL": "info", "DUET_WORKERS": "1"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	logs, w := io.Pipe()
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)
		s := bufio.NewScanner(logs)
		for s.Scan() {
			os.Stderr.Write(append(s.Bytes(), '\n'))
			if m := re.FindStringSubmatch(s.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.RunWorkers(ctx) }()
	t.Cleanup(func() { cancel(); <-done; w.Close() })

	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("the worker stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not listen on DUET_METRICS within 30s")
	}
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "duet_run_queue_depth"} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Host = "10.1.2.3:9420" // a kubelet's probe names the pod's address
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %.200q, want 200 with %q", path, resp.StatusCode, b, want)
		}
	}
}
