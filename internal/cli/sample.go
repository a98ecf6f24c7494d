package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
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
			made := token == "" && !noAuth
			if made {
				token = strings.TrimPrefix(duet.NewID("tok"), "tok_")
			}
			// Listen first: a token printed by a server that then fails to
			// listen is a token for nothing.
			url, stop, err := sample.StartOrderServer(cmd.Context(), addr, sample.NewOrders(), token)
			if err != nil {
				return listenHint(err)
			}
			defer stop()
			fmt.Fprintf(env.Stdout, "order MCP server listening on %s\n", url)
			if made {
				fmt.Fprintf(env.Stdout, "bearer token: %s\nclients send \"Authorization: Bearer %s\"; register the server with:\n  ORDERS_TOKEN=%s DUET_MCP_ALLOW_LOOPBACK=true duet server add --name orders --url %s --bearer-token-env ORDERS_TOKEN\n",
					token, token, token, url)
			}
			<-cmd.Context().Done()
			return nil
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
				return listenHint(err)
			}
			defer stop()
			fmt.Fprintf(env.Stdout, "sample shop listening on %s\n", url)
			<-cmd.Context().Done()
			return nil
		},
	}
	shop.Flags().StringVar(&shopAddr, "addr", "127.0.0.1:8431", "listen address (loopback only)")
	return group(cmd, orders, shop)
}

// listenHint adds to a sample server's failure to listen what to do about
// it: the commonest cause is the same sample server, still running from an
// earlier command.
func listenHint(err error) error {
	if duet.ErrorCode(err) != duet.CodeUnavailable {
		return err
	}
	return duet.WrapError(duet.CodeUnavailable, err, "%s; if it is this sample server, started before, use that one, or stop it first (kill %%1, or fg and Ctrl-C); or pass --addr 127.0.0.1:PORT",
		duet.ErrorMessage(err))
}
