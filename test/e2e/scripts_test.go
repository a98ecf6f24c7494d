package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestScriptsSayWhatTheyAreDoing: scripts/demo.sh and scripts/test.sh
// print a progress line before each step that can be silent for a minute
// or more on a cold machine (building, vetting, staticcheck, the tests).
// The scripts run for real, in a copy of their directory, with stand-ins
// for the programs they call: each stand-in only records that it ran, so
// the test sees the order of narration and work without compiling
// anything.
func TestScriptsSayWhatTheyAreDoing(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	for _, name := range []string{"demo.sh", "test.sh", "deps.sh", "gobuild.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(repo, "scripts", name), string(b), 0o755)
	}
	// The Node packages are installed already (deps.sh checks the stamp).
	write(t, filepath.Join(repo, "test", "node", "package-lock.json"), "{}", 0o644)
	stamp := filepath.Join(repo, "test", "node", "node_modules", ".duet-installed")
	write(t, stamp, "", 0o644)
	later := time.Now().Add(time.Hour)
	os.Chtimes(stamp, later, later)
	os.MkdirAll(filepath.Join(repo, "bench"), 0o755)
	os.MkdirAll(filepath.Join(repo, "deploy"), 0o755) // the deployment checks' module

	bin := filepath.Join(repo, "stand-ins")
	record := "#!/bin/sh\necho \"RAN $(basename \"$0\") $*\" >&2\n"
	for _, name := range []string{"gofmt", "chromium", "adb", "npm", "node", "initdb", "systemd-analyze"} {
		write(t, filepath.Join(bin, name), record, 0o755)
	}
	write(t, filepath.Join(bin, "git"), "#!/bin/sh\n", 0o755) // git ls-files: no Go files to format
	write(t, filepath.Join(bin, "pg_config"), "#!/bin/sh\necho "+bin+"\n", 0o755)
	// go build -o bin/duet leaves a duet that records its run too.
	write(t, filepath.Join(bin, "go"), record+`if [ "$1" = build ]; then mkdir -p bin; printf '#!/bin/sh\necho "RAN duet $*" >&2\n' > bin/duet; chmod +x bin/duet; fi
`, 0o755)

	run := func(script string) []string {
		cmd := exec.Command("bash", filepath.Join(repo, "scripts", script))
		cmd.Dir = repo
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + repo, "DUET_TEST_POSTGRES_URL=postgres://stand-in/", "DUET_CHROME_PATH=" + filepath.Join(bin, "chromium")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	// said returns the progress line printed last before the line that
	// starts with ran.
	said := func(lines []string, ran string) string {
		for i, l := range lines {
			if strings.HasPrefix(l, ran) {
				for j := i - 1; j >= 0; j-- {
					if !strings.HasPrefix(lines[j], "RAN ") {
						return lines[j]
					}
				}
				return ""
			}
		}
		t.Fatalf("%q never ran:\n%s", ran, strings.Join(lines, "\n"))
		return ""
	}
	for _, tt := range []struct {
		script, ran, want string
	}{
		{"demo.sh", "RAN go build", "building duet"},
		{"demo.sh", "RAN duet demo", "starting the demo"},
		{"test.sh", "RAN go vet", "go vet"},
		{"test.sh", "RAN go run honnef.co/go/tools/cmd/staticcheck", "staticcheck"},
		{"test.sh", "RAN go test -race", "race detector"},
		{"test.sh", "RAN go test -count=1 -timeout 10m", "deployment checks"},
	} {
		lines := run(tt.script)
		if !strings.HasPrefix(lines[0], strings.TrimSuffix(tt.script, ".sh")+" [") {
			t.Errorf("%s: the first line %q is not a progress line", tt.script, lines[0])
		}
		if got := said(lines, tt.ran); !strings.Contains(got, tt.want) || !strings.Contains(got, "s]: ") {
			t.Errorf("%s: before %q it said %q, want a progress line about %q", tt.script, tt.ran, got, tt.want)
		}
	}
}

// TestGoBuildSaysHowFar: scripts/gobuild.sh, the build of demo.sh and
// test.sh, compiles for real (a module of fresh packages, so the build
// cache has none of them) and says how far it is in a log — lines counting
// the compiled packages against the ones the build needs — then builds the
// binary; a compile error reaches the output as go prints it and the script
// exits with go build's status.
func TestGoBuildSaysHowFar(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "gobuild.sh"))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	fresh := time.Now().UnixNano() // new sources: nothing of them in the build cache
	write(t, filepath.Join(mod, "go.mod"), "module example.com/progress\n\ngo 1.26\n", 0o644)
	main := "package main\n\nimport (\n"
	for i := range 12 {
		write(t, filepath.Join(mod, fmt.Sprintf("p%d", i), "p.go"), fmt.Sprintf("package p%d\n\nconst X = %d\n", i, fresh+int64(i)), 0o644)
		main += fmt.Sprintf("\t\"example.com/progress/p%d\"\n", i)
	}
	main += ")\n\nfunc main() {\n"
	for i := range 12 {
		main += fmt.Sprintf("\tprintln(p%d.X)\n", i)
	}
	write(t, filepath.Join(mod, "cmd", "x", "main.go"), main+"}\n", 0o644)

	build := func() (string, error) {
		cmd := exec.Command("bash", script, "-o", filepath.Join(mod, "x"), "./cmd/x")
		cmd.Dir = mod
		out, err := cmd.CombinedOutput() // not a terminal: the log form
		return string(out), err
	}
	out, err := build()
	if err != nil {
		t.Fatalf("gobuild.sh: %v\n%s", err, out)
	}
	progress := regexp.MustCompile(`(?m)^build \[\d+s\]: compiled (\d+) of at most (\d+) packages \(example\.com/progress/`)
	if m := progress.FindAllStringSubmatch(out, -1); len(m) < 2 {
		t.Errorf("gobuild.sh said how far it was %d times, want a line at each tenth:\n%s", len(m), out)
	}
	if !regexp.MustCompile(`(?m)^build \[\d+s\]: compiled 13 of \d+ packages`).MatchString(out) {
		t.Errorf("gobuild.sh did not end with the count of compiled packages (13: twelve and main):\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(mod, "x")); err != nil {
		t.Errorf("no binary: %v", err)
	}

	write(t, filepath.Join(mod, "p3", "p.go"), "package p3\n\nconst X = 1 +\n", 0o644)
	out, err = build()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("gobuild.sh of a broken package: %v, want go build's exit status 1\n%s", err, out)
	}
	if !strings.Contains(out, "p3/p.go:") || !strings.Contains(out, "syntax error") {
		t.Errorf("the compile error did not reach the output:\n%s", out)
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestMakeInstallSaysWhereDuetWent: `make install` installs duet and, when
// that directory is not on PATH, prints the line that puts it there; the
// line works when pasted.
func TestMakeInstallSaysWhereDuetWent(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skipf("no make: %v", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	gopath := t.TempDir()
	env := []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + gopath, "GOPATH=" + gopath, "GOTOOLCHAIN=local", "GOFLAGS=" + os.Getenv("GOFLAGS")}
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		v, err := exec.Command(goBin, "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(v)))
	}
	cmd := exec.Command("make", "-s", "install")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	dir := filepath.Join(gopath, "bin")
	if !strings.Contains(string(out), "installed "+dir+"/duet") {
		t.Errorf("make install did not say where duet went:\n%s", out)
	}
	i := strings.Index(string(out), "export PATH=")
	if i < 0 {
		t.Fatalf("make install did not say how to put %s on PATH:\n%s", dir, out)
	}
	line := strings.SplitN(string(out[i:]), " (", 2)[0]
	check := exec.Command("bash", "--norc", "-c", line+" && duet --version")
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("pasted %q, then duet --version: %v\n%s", line, err, out)
	}
}
