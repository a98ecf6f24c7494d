package e2e

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStdioColdStart measures `duet mcp` from process start to the first
// tool result (spawn, open the store, handshake, list_test_tasks, exit), as a
// client that starts a fresh process per call sees it.
//
//	go test -run x -bench StdioColdStart -benchtime 20x ./test/e2e/
func BenchmarkStdioColdStart(b *testing.B) {
	home := b.TempDir()
	// Create and migrate the database once, as an installed Duet has it.
	prep := exec.Command(duetBin, "task", "list")
	prep.Env = minimalEnv("DUET_HOME=" + home)
	if err := prep.Run(); err != nil {
		b.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(duetBin, "mcp")
		cmd.Dir = "/"
		cmd.Env = minimalEnv("DUET_HOME=" + home)
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		cs.Close()
	}
}
