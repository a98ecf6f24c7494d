package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
)

func tokenCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Personal access tokens for HTTP clients (Authorization: Bearer)"}
	var name string
	var expires time.Duration
	create := &cobra.Command{
		Use: "create --as USER", Short: "Create a token that acts as USER (printed once; only its hash is stored)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			user, err := tokenUser(cmd)
			if err != nil {
				return err
			}
			a, err := openApp(cmd, env, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close()
			plain, hash := auth.NewToken()
			t := &duet.Token{UserID: user, Name: name, Hash: hash}
			if expires > 0 {
				e := time.Now().Add(expires)
				t.ExpiresAt = &e
			}
			actx, done := auditing(cmd.Context(), a, user, "token.create", "")
			err = a.Store.CreateToken(actx, t)
			done(err)
			if err != nil {
				return err
			}
			fmt.Fprintln(env.Stdout, plain)
			fmt.Fprintf(env.Stderr, "token %s for %s created; it is shown only this once: send it as \"Authorization: Bearer <token>\" to http://%s/mcp/http\n", t.ID, user, a.Config.Addr)
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "a label (e.g. laptop)")
	create.Flags().DurationVar(&expires, "expires", 0, "lifetime (e.g. 720h); default: no expiry")
	list := &cobra.Command{
		Use: "list --as USER", Short: "List a user's tokens", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			user, err := tokenUser(cmd)
			if err != nil {
				return err
			}
			return withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, _ string) error {
				toks, err := a.Store.FindTokens(cmd.Context(), user)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tCREATED\tEXPIRES\tCREATED WITH")
				for _, t := range toks {
					exp := "never"
					if t.ExpiresAt != nil {
						exp = t.ExpiresAt.Format(time.RFC3339)
					}
					parent := "-"
					if t.ParentID != "" {
						parent = t.ParentID
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.CreatedAt.Format(time.RFC3339), exp, parent)
				}
				return tw.Flush()
			})(cmd, nil)
		},
	}
	revoke := &cobra.Command{
		Use: "revoke ID --as USER", Short: "Revoke a token and every token created with it", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			user, err := tokenUser(cmd)
			if err != nil {
				return err
			}
			return withApp(env, func(cmd *cobra.Command, args []string, a *app.App, _ string) error {
				actx, done := auditing(cmd.Context(), a, user, "token.revoke", "")
				err := a.Store.DeleteToken(actx, user, args[0])
				done(err)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "token %s revoked\n", args[0])
				return nil
			})(cmd, args)
		},
	}
	for _, c := range []*cobra.Command{create, list, revoke} {
		c.Flags().Var(new(userIDFlag), "as", "the user the token acts as (required; --user is the same flag)")
		// --user was the flag's first name; every other command says --as.
		c.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
			if name == "user" {
				name = "as"
			}
			return pflag.NormalizedName(name)
		})
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// tokenUser is the --as (or --user) of a token command: tokens are
// credentials, so the user is named explicitly, never taken from
// DUET_USER or the operating-system user.
func tokenUser(cmd *cobra.Command) (string, error) {
	user := cmd.Flag("as").Value.String()
	if user == "" {
		return "", usage("%s needs --as USER: the user the token acts as", cmd.CommandPath())
	}
	return user, nil
}
