// Package pgtest gives tests a real PostgreSQL: a fresh, empty schema in the
// server named by DUET_TEST_POSTGRES_URL (scripts/test.sh starts a throwaway
// cluster and sets it), or a whole throwaway cluster of their own (for tests
// that stop and restart the server).
//
// Tests skip when DUET_TEST_POSTGRES_URL is unset, unless
// DUET_REQUIRE_POSTGRES=1 (scripts/test.sh sets it, so CI never skips them).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables the package reads.
const (
	EnvURL     = "DUET_TEST_POSTGRES_URL" // a server tests may create schemas in
	EnvRequire = "DUET_REQUIRE_POSTGRES"  // "1": a missing server fails instead of skipping
)

// Required reports whether PostgreSQL tests must run (DUET_REQUIRE_POSTGRES=1).
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// BaseURL returns DUET_TEST_POSTGRES_URL, skipping the test when it is
// unset (failing it when PostgreSQL is required).
func BaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if Required() {
			t.Fatalf("%s=1 but %s is not set: run the tests with scripts/test.sh, which starts a PostgreSQL", EnvRequire, EnvURL)
		}
		t.Skipf("no PostgreSQL: set %s (scripts/test.sh does)", EnvURL)
	}
	return u
}

// URL returns the URL of a new, empty schema on the test server: the same
// server and database as DUET_TEST_POSTGRES_URL with search_path set to the
// schema, so everything a store creates lands there. The schema is dropped
// when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	return SchemaURL(t, BaseURL(t))
}

// SchemaURL creates a new, empty schema on the server at base and returns
// base with search_path set to it; the schema is dropped when t ends.
func SchemaURL(t testing.TB, base string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: creating a schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return // the server is gone (a test stopped it): nothing to clean
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	return WithParam(base, "search_path", schema)
}

// WithParam returns the URL u with the query parameter k set to v.
func WithParam(u, k, v string) string {
	p, err := url.Parse(u)
	if err != nil {
		panic(err)
	}
	q := p.Query()
	q.Set(k, v)
	p.RawQuery = q.Encode()
	return p.String()
}

// Cluster is a throwaway PostgreSQL server in a temporary directory, on a
// free loopback port, with trust authentication and no fsync. When the test
// runs as root the server runs as the postgres user (PostgreSQL refuses to
// run as root).
type Cluster struct {
	URL  string // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
	Port int

	bin, dir string
	cred     *syscall.Credential
	t        testing.TB
}

// BinDir finds the PostgreSQL server programs (initdb, pg_ctl): `pg_config
// --bindir`, else Debian's /usr/lib/postgresql/VERSION/bin, newest first.
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("no PostgreSQL server programs (initdb, pg_ctl) found: install the postgresql package (scripts/deps.sh does)")
}

// StartCluster initialises and starts a new cluster, stopped and removed
// when the test ends. It skips the test when PostgreSQL is neither
// installed nor required.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		if Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir, err := os.MkdirTemp("", "duet-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{bin: bin, dir: dir, t: t}
	t.Cleanup(func() {
		c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
		os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgtest: running as root needs a postgres user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		os.Chmod(dir, 0o755)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := c.run("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	c.Port = freePort(t)
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	c.Start()
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs a server program as the cluster's user.
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

// Start starts the server (again) on its port and waits until it accepts
// connections.
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", c.Port, c.dir)
	if out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		c.t.Fatalf("pgtest: pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Stop stops the server (fast shutdown: sessions are disconnected).
func (c *Cluster) Stop() {
	c.t.Helper()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
