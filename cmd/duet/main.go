// Command duet is the Duet testing platform: an MCP server of test tasks,
// cases and runs, and an MCP client that calls other teams' tools from
// inside test cases. Run `duet --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/duet-test/duet/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
