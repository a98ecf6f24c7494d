package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/browser"
)

// The README test: the ```sh blocks of README.md, in order, as written,
// pasted into one bash session at the repository's root by a new user —
// fresh HOME (so a fresh default DUET_HOME), no duet on PATH, no DUET_*
// variable — the way issue 18's user followed it. A block is skipped only
// when the README marks it <!-- readme-test: skip: REASON -->. A line ends
// in exit 0 unless its comment says "(exit N)"; an error code its comment
// names must be in its output. After a line ending in "&", the session
// waits, as a person does, for the server to say it is listening.

// readmeBlock is one ```sh block of the README.
type readmeBlock struct {
	line     int      // of the opening fence
	commands []string // each a whole command: continuation lines joined
	skip     string   // the reason, when the README marks it
}

var skipMark = regexp.MustCompile(`^<!-- readme-test: skip: (.+) -->$`)

func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	skip := ""
	pending := ""
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && line == "```sh":
			cur = &readmeBlock{line: i + 1, skip: skip}
			skip = ""
		case cur == nil:
			if m := skipMark.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				skip = m[1]
			} else if strings.TrimSpace(line) != "" {
				skip = ""
			}
		case line == "```":
			if pending != "" {
				t.Fatalf("README.md:%d: a block ends in a continuation line", i+1)
			}
			blocks = append(blocks, *cur)
			cur = nil
		case strings.HasSuffix(line, "\\"):
			pending += line + "\n"
		default:
			cmd := pending + line
			pending = ""
			if strings.TrimSpace(cmd) != "" && !strings.HasPrefix(strings.TrimSpace(cmd), "#") {
				cur.commands = append(cur.commands, cmd)
			}
		}
	}
	return blocks
}

var (
	expectExit = regexp.MustCompile(`\(exit (\d+)\)`)
	errorCode  = regexp.MustCompile(`\b[A-Z]+(?:_[A-Z]+)+\b`)
	rcMarker   = regexp.MustCompile(`(?m)^@@rc=(\d+)@@$`)
)

// comment is the trailing "# ..." of a command's last line.
func comment(cmd string) string {
	lines := strings.Split(cmd, "\n")
	last := lines[len(lines)-1]
	if i := strings.Index(last, "  #"); i >= 0 {
		return last[i+3:]
	}
	return ""
}

// session is a bash reading commands from a pipe, its output (stdout and
// stderr of everything it starts) collected.
type session struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   strings.Builder
}

func (s *session) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// waitFor waits until the output after offset from matches re.
func (s *session) waitFor(from int, re *regexp.Regexp, d time.Duration) ([]string, bool) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.output()[from:]); m != nil {
			return m, true
		}
	}
	return nil, false
}

func TestREADME(t *testing.T) {
	if err := browser.NewPool(browser.Options{}).Available(); err != nil {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			t.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
		}
		t.Skipf("the README runs a browser case; no Chromium: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, filepath.Join(root, "README.md"))
	// `duet report ... -o report.html` writes into the repository's root:
	// keep whatever is there.
	report := filepath.Join(root, "report.html")
	if old, err := os.ReadFile(report); err == nil {
		t.Cleanup(func() { os.WriteFile(report, old, 0o644) })
	} else {
		t.Cleanup(func() { os.Remove(report) })
	}
	if len(blocks) < 5 {
		t.Fatalf("README.md has %d sh blocks; the parser is broken", len(blocks))
	}

	// A new user's environment: a fresh HOME, the go command on PATH and
	// no duet; Go's caches are the machine's (warm; the README's go
	// install still compiles and links duet).
	home := t.TempDir()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Dir(goBin) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	env := []string{"HOME=" + home, "USER=tester", "LOGNAME=tester", "PATH=" + path, "LANG=C.UTF-8", "TERM=dumb",
		"GOTOOLCHAIN=local", "GOFLAGS=" + os.Getenv("GOFLAGS")}
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		v, err := exec.Command(goBin, "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(v)))
	}
	if p := os.Getenv("DUET_CHROME_PATH"); p != "" {
		env = append(env, "DUET_CHROME_PATH="+p) // where this machine keeps Chromium
	}

	// The README's fixed ports (8420, 8431, 8432) may be taken on a shared
	// machine: as root, the session gets a network namespace of its own
	// (only loopback; modules come from the cache).
	args := []string{"bash", "--norc", "--noprofile"}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("unshare"); err == nil {
			if exec.Command("unshare", "-n", "true").Run() == nil {
				args = []string{"unshare", "-n", "--", "sh", "-c", "ip link set lo up && exec bash --norc --noprofile"}
				env = append(env, "GOPROXY=off")
			}
		}
	}
	s := &session{cmd: exec.Command(args[0], args[1:]...)}
	s.cmd.Dir = root
	s.cmd.Env = env
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReader(pr)
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); pw.Close(); close(exited) }()
	defer func() {
		io.WriteString(s.stdin, "kill $(jobs -p) 2>/dev/null; wait\nexit\n")
		s.stdin.Close()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("the session's whole output:\n%s", s.output())
		}
	}()

	run := func(cmd string, d time.Duration) (int, string) {
		from := len(s.output())
		if _, err := io.WriteString(s.stdin, cmd+"\nprintf '\\n@@rc=%d@@\\n' $?\n"); err != nil {
			t.Fatalf("writing %q: %v", cmd, err)
		}
		m, ok := s.waitFor(from, rcMarker, d)
		if !ok {
			t.Fatalf("%q did not finish within %s:\n%s", cmd, d, s.output()[from:])
		}
		rc, _ := strconv.Atoi(m[1])
		return rc, s.output()[from:]
	}
	if rc, out := run("command -v duet", 10*time.Second); rc == 0 {
		t.Fatalf("duet is on the new user's PATH already: %s", out)
	}
	ran := 0
	for _, b := range blocks {
		if b.skip != "" {
			t.Logf("README.md:%d: skipped (%s)", b.line, b.skip)
			continue
		}
		for _, c := range b.commands {
			ran++
			line := strings.TrimSpace(strings.SplitN(c, "  #", 2)[0])
			if strings.HasSuffix(line, "&") {
				from := len(s.output())
				if rc, out := run(c, 10*time.Second); rc != 0 {
					t.Fatalf("README.md:%d: %s\nexit %d:\n%s", b.line, c, rc, out)
				}
				// What a person waits for before typing on.
				if _, ok := s.waitFor(from, regexp.MustCompile(`listening on|duet serving`), 60*time.Second); !ok {
					t.Fatalf("README.md:%d: %s\nnever said it was listening:\n%s", b.line, c, s.output()[from:])
				}
				continue
			}
			want := 0
			if m := expectExit.FindStringSubmatch(comment(c)); m != nil {
				want, _ = strconv.Atoi(m[1])
			}
			rc, out := run(c, 5*time.Minute)
			if rc != want {
				t.Fatalf("README.md:%d: %s\nexit %d, want %d:\n%s", b.line, c, rc, want, out)
			}
			for _, code := range errorCode.FindAllString(comment(c), -1) {
				if !strings.Contains(out, code) {
					t.Errorf("README.md:%d: %s\nthe output lacks %s, which the README promises:\n%s", b.line, c, code, out)
				}
			}
			for prefix, want := range map[string]string{
				"duet run api-smoke":              "PASSED",
				"duet run sample-shop --as alice": "PASSED",
				"duet report latest":              "wrote the html report",
				"curl ":                           `"api-smoke"`,
				"duet server call":                "A1001",
			} {
				if strings.HasPrefix(c, prefix) && !strings.Contains(out, want) {
					t.Errorf("README.md:%d: %s\nthe output lacks %q:\n%s", b.line, c, want, out)
				}
			}
		}
	}
	if ran < 15 {
		t.Errorf("ran %d README commands; want every block's", ran)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "duet", "duet.db")); err != nil {
		t.Errorf("the data is not in the default DUET_HOME: %v", err)
	}
}
