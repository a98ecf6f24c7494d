package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestWALIndexKeepsSQLiteLocks: finding and reading the wal-index header
// leaves every POSIX lock this process holds on the -shm file where SQLite
// put it. Those locks belong to the process, and closing any descriptor of
// the file drops them all (SQLite's DMS lock among them, after which
// another process may rebuild the wal-index under this one's readers): the
// version that opened the -shm file to map it failed here, its lock list
// empty afterwards.
func TestWALIndexKeepsSQLiteLocks(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks:", err)
	}
	path := filepath.Join(t.TempDir(), "duet.db")
	d, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := os.Stat(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	before := shmLocks(t, ino)
	if len(before) == 0 {
		t.Fatal("SQLite holds no lock on the -shm file: nothing to check")
	}
	c := d.cache.counter
	for range 100 {
		if _, ok := c.read(); !ok {
			t.Fatal("the counter was not read on the cache's own connection")
		}
	}
	if c.index == nil {
		t.Fatal("the wal-index was not found")
	}
	if after := shmLocks(t, ino); !slices.Equal(before, after) {
		t.Fatalf("this process's locks on the -shm file were %q before the wal-index was read, %q after", before, after)
	}
}

// shmLocks lists this process's POSIX locks on inode ino, as /proc/locks
// shows them ("READ 128 128"), sorted.
func shmLocks(t *testing.T, ino uint64) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	pid, suffix := fmt.Sprint(os.Getpid()), fmt.Sprintf(":%d", ino)
	var out []string
	for line := range strings.Lines(string(b)) {
		// 1: POSIX  ADVISORY  READ 1234 00:2f:5678 128 128
		f := strings.Fields(line)
		if len(f) >= 8 && f[1] == "POSIX" && f[4] == pid && strings.HasSuffix(f[5], suffix) {
			out = append(out, f[3]+" "+f[6]+" "+f[7])
		}
	}
	slices.Sort(out)
	return out
}
