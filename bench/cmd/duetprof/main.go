// Command duetprof is the duet command line with a CPU profile: when
// DUET_CPUPROFILE names a file, the whole life of `duet serve`, `duet mcp`
// or `duet worker` is profiled into it ("%p" in its name stands for the
// process id, so that each of several instances writes its own).
// `load -duet duetprof` then profiles duet serve under load (make profile);
// with DUET_CPUPROFILE in load's own environment, the scale section's
// workers too.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/duet-test/duet/internal/cli"
)

func main() {
	if path := os.Getenv("DUET_CPUPROFILE"); path != "" && len(os.Args) > 1 && (os.Args[1] == "serve" || os.Args[1] == "mcp" || os.Args[1] == "worker") {
		f, err := os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	if code != 0 {
		pprof.StopCPUProfile()
		os.Exit(code)
	}
}
