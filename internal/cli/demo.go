package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/sample"
)

func sampleCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "sample", Short: "Sample systems for tests and the demo"}
	var addr, token string
	var noAuth bool
	orders := &cobra.Command{
		Use:   "order-server",
		Short: "Run the sample order-query MCP server (tools query_order, set_order_status, list_orders)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = env.Getenv("DUET_SAMPLE_TOKEN")
			}
			if token == "" && !noAuth {
				token = strings.TrimPrefix(duet.NewID("tok"), "tok_")
				fmt.Fprintf(env.Stdout, "bearer token: %s\n(clients send \"Authorization: Bearer <token>\"; register with DUET_SAMPLE_TOKEN=<token> duet server add --name orders --url URL --bearer-token-env DUET_SAMPLE_TOKEN)\n", token)
			}
			return sample.RunOrderServer(cmd.Context(), addr, token, env.Stdout)
		},
	}
	orders.Flags().StringVar(&addr, "addr", "127.0.0.1:8432", "listen address (loopback only)")
	orders.Flags().StringVar(&token, "token", "", "bearer token clients must send (default: DUET_SAMPLE_TOKEN, else a new random one, printed)")
	orders.Flags().BoolVar(&noAuth, "no-auth", false, "require no token at all")
	var shopAddr string
	shop := &cobra.Command{
		Use:   "shop",
		Short: "Run the sample H5 shop (order pages whose URL carries orderId)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url, stop, err := sample.StartShop(cmd.Context(), shopAddr, sample.NewOrders())
			if err != nil {
				return err
			}
			defer stop()
			fmt.Fprintf(env.Stdout, "sample shop listening on %s\n", url)
			<-cmd.Context().Done()
			return nil
		},
	}
	shop.Flags().StringVar(&shopAddr, "addr", "127.0.0.1:8431", "listen address (loopback only)")
	cmd.AddCommand(orders, shop)
	return cmd
}

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
		if !keep {
			defer os.RemoveAll(dir)
		}
	}
	cfg, err := config.Load(func(k string) string {
		switch k {
		case "DUET_HOME":
			return home
		case "DUET_DATABASE_URL", "DUET_ADDR":
			return ""
		case "DUET_LOG_LEVEL":
			if v := env.Getenv(k); v != "" {
				return v
			}
			return "warn"
		}
		return env.Getenv(k)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "== Duet demo (data in %s)\n", home)

	orders := sample.NewOrders()
	shopURL, stopShop, err := sample.StartShop(ctx, "127.0.0.1:0", orders)
	if err != nil {
		return err
	}
	defer stopShop()
	fmt.Fprintf(out, "sample shop:        %s\n", shopURL)

	a, err := app.Open(ctx, cfg, app.Options{Stderr: env.Stderr})
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
	fmt.Fprintf(out, "duet:               %s/mcp/http\n", duetURL)

	src, err := duet.Examples.ReadFile("examples/api-smoke.yaml")
	if err != nil {
		return err
	}
	suite, err := compiler.CompileSuite(ctx, src, "examples/api-smoke.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		return err
	}
	suite.Task.BaseURL = shopURL
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== alice applies examples/api-smoke.yaml: task %s (%d cases)\n", res.Task.ID, len(res.Cases))
	fmt.Fprintf(out, "\n== alice runs it\n")
	started, err := startRun(ctx, a, "alice", res.Task.ID, nil, "")
	if err != nil {
		return err
	}
	run, err := executeAndFollow(ctx, a, "alice", started.RunID, out, true)
	if err != nil {
		return err
	}
	ok := run.Status == duet.StatusPassed

	plain, hash := auth.NewToken()
	if err := a.Store.CreateToken(ctx, &duet.Token{UserID: "alice", Name: "demo", Hash: hash}); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== Connect an MCP client\n")
	fmt.Fprintf(out, "HTTP:  %s/mcp/http  with header  Authorization: Bearer %s\n", duetURL, plain)
	fmt.Fprintf(out, "stdio: DUET_HOME=%s DUET_USER=alice %s mcp\n", home, selfPath())
	if ok {
		fmt.Fprintf(out, "\nDEMO OK: alice's run %s passed.\n", run.ID)
	} else {
		fmt.Fprintf(out, "\nDEMO FAILED: alice's run %s ended %s.\n", run.ID, run.Status)
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

var _ = time.Second
