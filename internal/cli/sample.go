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
