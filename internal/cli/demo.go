package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/sample"
)

func demoCmd(env Env) *cobra.Command {
	var keep bool
	var home string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the end-to-end demo on a temporary DUET_HOME",
		Long: `demo starts Duet with a fresh data directory, the sample shop and the sample
order MCP server, applies the example suite as alice, runs it with progress output
and prints the report location and how to connect an MCP client. It exits 0 when
the demo behaves as expected. --keep-running leaves everything up until Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, env, home, keep)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-running", false, "leave the servers up until Ctrl-C")
	cmd.Flags().StringVar(&home, "home", "", "data directory (default: a new temporary one)")
	return cmd
}

func runDemo(cmd *cobra.Command, env Env, home string, keep bool) error {
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	out := env.Stdout
	if home == "" {
		dir, err := os.MkdirTemp("", "duet-demo-")
		if err != nil {
			return usage("cannot create a temporary directory: %v", err)
		}
		home = dir
	}
	getenv := func(k string) string {
		switch k {
		case "DUET_HOME":
			return home
		case "DUET_DATABASE_URL", "DUET_DATABASE_URL_FILE", "DUET_ARTIFACT_DIR", "DUET_ADDR":
			return ""
		case "DUET_MCP_ALLOW_LOOPBACK":
			return "true" // the sample order server runs on this machine
		case "DUET_LOG_LEVEL":
			if v := env.Getenv(k); v != "" {
				return v
			}
			return "warn"
		}
		return env.Getenv(k)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "== Duet demo (data in %s)\n", home)

	// The systems under test: a sample H5 shop and the order service's MCP
	// server, over one order book.
	orders := sample.NewOrders()
	shopURL, stopShop, err := sample.StartShop(ctx, "127.0.0.1:0", orders)
	if err != nil {
		return err
	}
	defer stopShop()
	orderToken, _ := auth.NewToken()
	orderURL, stopOrders, err := sample.StartOrderServer(ctx, "127.0.0.1:0", orders, orderToken)
	if err != nil {
		return err
	}
	defer stopOrders()
	fmt.Fprintf(out, "sample shop:          %s\n", shopURL)
	fmt.Fprintf(out, "sample order server:  %s (MCP, bearer token required)\n", orderURL)

	a, err := app.Open(ctx, cfg, app.Options{Stderr: env.Stderr, Getenv: getenv})
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	serveDone := make(chan error, 1)
	sctx, stopServe := context.WithCancel(ctx)
	go func() { serveDone <- a.Serve(sctx, ln, app.ServeOptions{}) }()
	defer func() { stopServe(); <-serveDone }()
	duetURL := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "duet:                 %s/mcp/http\n", duetURL)

	fmt.Fprintf(out, "\n== alice registers the order server as \"order-query\" (her token is sealed in the vault)\n")
	srv, err := a.MCPClient.Register(ctx, mcpclient.Registration{Owner: "alice", Name: "order-query", URL: orderURL,
		Headers: map[string]string{"Authorization": "Bearer " + orderToken}})
	if err != nil {
		return err
	}
	if srv, err = a.MCPClient.Sync(ctx, "alice", srv.ServerKey); err != nil {
		return err
	}
	fmt.Fprintf(out, "serverKey %s: %d tools archived\n", srv.ServerKey, srv.ToolCount)

	src, err := duet.Examples.ReadFile("examples/shop.yaml")
	if err != nil {
		return err
	}
	suite, err := compiler.CompileSuite(ctx, src, "examples/shop.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		return err
	}
	suite.Task.BaseURL = shopURL
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== alice applies examples/shop.yaml: task %s, %d cases, shared with bob\n", res.Task.ID, len(res.Cases))

	fmt.Fprintf(out, "\n== alice runs it (Chromium, iPhone 15 emulation; the case calls query_order as alice)\n")
	aliceRun, err := demoRun(ctx, a, home, "alice", res.Task.ID, out)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "\n== bob runs alice's shared task; he has not registered the order server\n")
	bobRun, err := demoRun(ctx, a, home, "bob", res.Task.ID, out)
	if err != nil {
		return err
	}
	bobExpected := false
	if execs, err := a.Store.FindExecutions(ctx, bobRun.ID); err == nil {
		for _, x := range execs {
			for _, r := range x.Results {
				if r.Kind == duet.StepMCPCall && r.ErrorCode == duet.CodeMCPServerNotConfigured {
					bobExpected = true
				}
			}
		}
	}
	if bobExpected {
		fmt.Fprintln(out, "As expected: bob's run started, and its mcpCall step failed with MCP_SERVER_NOT_CONFIGURED —")
		fmt.Fprintln(out, "Duet calls MCP tools as the person running the test, never with the author's credentials.")
	}

	plain, hash := auth.NewToken()
	if err := a.Store.CreateToken(ctx, &duet.Token{UserID: "alice", Name: "demo", Hash: hash}); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== Connect an MCP client to this Duet\n")
	if !keep {
		fmt.Fprintln(out, "(the HTTP server stops when the demo ends: run `duet demo --keep-running` to keep it up)")
	}
	fmt.Fprintf(out, "HTTP:  %s/mcp/http  with header  Authorization: Bearer %s\n", duetURL, plain)
	fmt.Fprintf(out, "stdio: DUET_HOME=%s DUET_USER=alice %s mcp\n", home, selfPath())
	fmt.Fprintf(out, "The data directory (database, reports, screenshots) stays in %s; delete it when done.\n", home)

	ok := aliceRun.Status == duet.StatusPassed && bobExpected
	switch {
	case ok:
		fmt.Fprintf(out, "\nDEMO OK: alice's run %s passed; bob's run %s failed exactly where it should.\n", aliceRun.ID, bobRun.ID)
	case aliceRun.Status != duet.StatusPassed:
		fmt.Fprintf(out, "\nDEMO FAILED: alice's run %s ended %s (see the report).\n", aliceRun.ID, aliceRun.Status)
	default:
		fmt.Fprintf(out, "\nDEMO FAILED: bob's run %s did not fail with MCP_SERVER_NOT_CONFIGURED.\n", bobRun.ID)
	}
	if keep {
		fmt.Fprintln(out, "Everything stays up until Ctrl-C.")
		<-ctx.Done()
	}
	if !ok {
		return &exitError{1, nil}
	}
	return nil
}

// demoRun starts a run as user and follows it to the end with progress,
// as duet run does (the app's service, in this process), then writes its
// HTML report under home/reports and says where.
func demoRun(ctx context.Context, a *app.App, home, user, taskID string, out io.Writer) (catalog.RunView, error) {
	c := client.NewLocal(a, user) // not closed: the demo closes a
	started, err := c.StartRun(ctx, catalog.StartRunIn{TaskID: taskID, IdempotencyKey: duet.NewID("demo")}, nil)
	if err != nil {
		return catalog.RunView{}, err
	}
	run, err := executeAndFollow(ctx, c, started.RunID, out, true)
	if err != nil {
		return catalog.RunView{}, err
	}
	path, err := demoReport(ctx, a, home, user, run.Run.ID)
	if err != nil {
		return catalog.RunView{}, err
	}
	fmt.Fprintf(out, "report: %s\n", path)
	return run.Run, nil
}

// demoReport writes the HTML report of a run under home/reports.
func demoReport(ctx context.Context, a *app.App, home, user, runID string) (string, error) {
	r, err := report.Build(ctx, a.Store, a.Artifacts, user, runID)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(home, "reports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, runID+".html")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := r.WriteHTML(f); err != nil {
		return "", err
	}
	return path, f.Close()
}

func selfPath() string {
	p, err := os.Executable()
	if err != nil {
		return "duet"
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
