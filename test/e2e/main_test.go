// Package e2e tests the real duet binary from the outside: it builds it once,
// starts it as a user would (stdio from another working directory with only
// a minimal environment, or `duet serve` on a free port) and drives it with
// the official go-sdk MCP client and plain HTTP.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var duetBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "duet-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	duetBin = filepath.Join(dir, "duet")
	// -tags conformance: TestLimitsOverHTTP mounts the conformance fixtures
	// (slow tools), which only that build has.
	build := exec.Command("go", "build", "-tags", "conformance", "-o", duetBin, "../../cmd/duet")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building duet:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// minimalEnv is what desktop clients give a stdio server: little more than
// HOME and PATH — and DUET_MCP_FAST_PATH when the test run sets it
// (DUET_MCP_FAST_PATH=off go test ./...: the binary too runs without the
// MCP fast paths).
func minimalEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "USER=tester"}
	if v := os.Getenv("DUET_MCP_FAST_PATH"); v != "" {
		env = append(env, "DUET_MCP_FAST_PATH="+v)
	}
	return append(env, extra...)
}

// duet runs a duet command to completion.
func duet(t *testing.T, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(duetBin, args...)
	cmd.Dir = "/"
	cmd.Env = minimalEnv("DUET_HOME=" + home)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// server is a running `duet serve`.
type server struct {
	URL    string // http://127.0.0.1:PORT
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
}

func (s *server) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

var addrRe = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// serve starts `duet serve` on a free port with the given environment.
func serve(t *testing.T, home string, env []string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(duetBin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = "/"
	cmd.Env = append(minimalEnv("DUET_HOME="+home), env...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stderr.WriteString(line + "\n")
			s.mu.Unlock()
			if m := addrRe.FindStringSubmatch(line); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
		io.Copy(io.Discard, errPipe)
	}()
	go func() { cmd.Wait(); close(s.done) }()
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-s.done:
		t.Fatalf("duet serve exited: %s", s.Stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("duet serve did not start: %s", s.Stderr())
	}
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop sends SIGTERM and waits for a graceful exit.
func (s *server) Stop(t *testing.T) {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("duet serve did not stop on SIGTERM within 30s")
	}
}

// api is the system under test of the e2e suites: a small JSON API.
func api(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"status":"paid"}`, r.PathValue("id"))
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		w.Write([]byte(`{}`))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func suiteFile(t *testing.T, baseURL string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "suite.yaml")
	src := `task:
  name: orders-api
  description: the orders API
  baseURL: ` + baseURL + `
  sharedWith: [bob]
cases:
  - key: paid
    title: order A1 is paid
    steps:
      - http: {url: /orders/A1, saveAs: order}
      - assert: order.status == 200 && order.body.status == "paid"
  - key: shipped
    title: order A2 is shipped (fails)
    steps:
      - http: {url: /orders/A2, saveAs: order}
      - assert: {expr: order.body.status == "shipped", message: A2 should have shipped}
`
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
