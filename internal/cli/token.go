package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
)

func tokenCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Personal access tokens for HTTP clients (Authorization: Bearer) and duet --server"}
	var name string
	var expires time.Duration
	create := &cobra.Command{
		Use: "create [--name LABEL] [--expires 720h]", Short: "Create a token that acts as you (printed once; only its hash is stored)", Args: cobra.NoArgs,
		Long: `create makes a personal access token that acts as the command's user (--as, else
DUET_USER, else the operating-system user; against a Duet server, the user of the
token the command sends, whose child the new token is). It is printed once, on
standard output; only its hash is stored.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if expires < 0 {
				return usage("--expires: want a positive duration, like 720h")
			}
			in := api.TokenIn{Name: name}
			if in.Name == "" {
				host, _ := os.Hostname()
				in.Name = "duet token create"
				if host != "" {
					in.Name += " on " + host
				}
			}
			if expires > 0 {
				in.ExpiresAt = time.Now().Add(expires).UTC()
			}
			return withClient(env, func(cmd *cobra.Command, _ []string, c client.Client) error {
				out, err := c.CreateToken(cmd.Context(), in)
				if err != nil {
					return err
				}
				fmt.Fprintln(env.Stdout, out.Secret)
				where := c.Server()
				if where == "" {
					cfg, err := loadConfig(env)
					if err != nil {
						return err
					}
					where = "http://" + cfg.Addr
				}
				fmt.Fprintf(env.Stderr, "token %s for %s created; it is shown only this once: send it as \"Authorization: Bearer <token>\" to %s/mcp/http, or keep it for duet --server %s: duet login %s\n",
					out.Token.ID, c.User(), where, where, where)
				return nil
			})(cmd, args)
		},
	}
	create.Flags().StringVar(&name, "name", "", "a label (e.g. laptop, ci); default: duet token create on HOSTNAME")
	create.Flags().DurationVar(&expires, "expires", 0, "lifetime (e.g. 720h); default: no expiry")
	list := clientCmd(env, &cobra.Command{
		Use: "list", Short: "List your tokens (never their values)", Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client) error {
		list, err := c.ListTokens(cmd.Context())
		if err != nil {
			return err
		}
		return printTable(env.Stdout, "ID\tNAME\tCREATED\tEXPIRES\tCREATED WITH", list.Tokens, func(t *duet.Token) string {
			exp := "never"
			if t.ExpiresAt != nil {
				exp = t.ExpiresAt.Format(time.RFC3339)
			}
			parent := "-"
			if t.ParentID != "" {
				parent = t.ParentID
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", t.ID, t.Name, t.CreatedAt.Format(time.RFC3339), exp, parent)
		})
	})
	revoke := argCmd(env, "revoke ID", "Revoke a token and every token created with it", client.Client.RevokeToken,
		func(_, id string) string { return "token " + id + " revoked" })
	addAs(create)
	for _, c := range []*cobra.Command{create, list, revoke} {
		// --user was the flag's first name; every command says --as.
		c.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
			if name == "user" {
				name = "as"
			}
			return pflag.NormalizedName(name)
		})
	}
	return group(cmd, create, list, revoke)
}
