package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/vault"
)

func vaultCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "vault", Short: "Your secrets (${secrets.NAME}) and the master key that encrypts them and MCP server credentials"}
	var rewrapOnly, prune bool
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Make a new master key and re-encrypt every stored credential under it",
		Long: `rotate generates a new primary master key, keeps the old ones in the key file as
previous keys, and re-encrypts every stored credential under the new key in one
transaction. With the key in DUET_MASTER_KEY there is no file to rotate: set the new
key in DUET_MASTER_KEY, move the old one to DUET_MASTER_KEY_PREVIOUS and run
"duet vault rotate --rewrap-only". --prune then drops the previous keys from the key
file once nothing needs them. Running servers pick the new key up by themselves.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return localOnly(cmd, env, "the master key is this machine's (its key file or DUET_MASTER_KEY): run it where the Duet server runs, on its DUET_HOME or database")
		},
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, user string) error {
			_, info, err := a.Keyring(env.Getenv)
			if err != nil {
				return err
			}
			if info.Generated {
				fmt.Fprintf(env.Stderr, "generated a new master key at %s; back it up: without it stored credentials cannot be decrypted\n", info.Path)
			}
			if !rewrapOnly {
				if info.Source == vault.SourceEnv {
					return usage("the master key comes from %s: set the new key there, move the old one to %s, then run `duet vault rotate --rewrap-only`",
						vault.EnvMasterKey, vault.EnvMasterKeyPrevious)
				}
				id, err := vault.RotateKeyFile(info.Path)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "new primary key %s written to %s (previous keys kept)\n", id, info.Path)
			}
			// Audited as every operation is: governed, one record.
			var res mcpclient.RewrapResult
			var replaced, total int
			err = a.Catalog.Govern(cmd.Context(), catalog.Op{Caller: duet.Caller{UserID: user, Source: duet.SourceCLI}, Method: "rotateVault"}, func(ctx context.Context) (int, error) {
				var err error
				if res, err = a.MCPClient.Rewrap(ctx); err != nil {
					return 0, err
				}
				replaced, total, err = a.Secrets.Rewrap(ctx)
				return 0, err
			})
			if res.PrimaryID != "" {
				fmt.Fprintf(env.Stdout, "re-encrypted %d of %d credential(s) under key %s\n", res.Rewrapped, res.Total, res.PrimaryID)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "re-encrypted %d of %d secret(s) under key %s\n", replaced, total, res.PrimaryID)
			if prune {
				if info.Source == vault.SourceEnv {
					fmt.Fprintf(env.Stdout, "remove the old keys from %s yourself\n", vault.EnvMasterKeyPrevious)
					return nil
				}
				keys, err := vault.ReadKeyFile(info.Path)
				if err != nil {
					return err
				}
				defer func() {
					for _, k := range keys {
						clear(k)
					}
				}()
				if err := vault.WriteKeyFile(info.Path, keys[0]); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "removed %d previous key(s) from %s\n", len(keys)-1, info.Path)
			} else {
				fmt.Fprintln(env.Stdout, "previous keys stay usable until you run `duet vault rotate --rewrap-only --prune`")
			}
			return nil
		}),
	}
	rotate.Flags().BoolVar(&rewrapOnly, "rewrap-only", false, "do not make a new key; re-encrypt under the current primary key")
	rotate.Flags().BoolVar(&prune, "prune", false, "after re-encrypting, drop the previous keys from the key file")
	return group(cmd, rotate, vaultSetCmd(env), vaultListCmd(env), vaultDeleteCmd(env))
}

func vaultSetCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use:   "set NAME",
		Short: "Set one of your secrets from standard input (steps of the runs you execute read it as ${secrets.NAME})",
		Long: `set stores the value read from standard input (one trailing newline dropped) as
your secret NAME, sealed under the master key. The steps of every run you execute
read it as ${secrets.NAME}; it is never written in a task, and every run redacts
it by value from what it keeps. Pipe the value in so it stays out of your shell
history: printf %s "$PASSWORD" | duet vault set SHOP_PASSWORD`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		b, err := io.ReadAll(io.LimitReader(env.Stdin, duet.MaxSecretBytes+2))
		if err != nil {
			return err
		}
		value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		clear(b)
		set, err := c.SetSecret(cmd.Context(), api.SecretIn{Name: args[0], Value: value})
		value = ""
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "secret %s %s for %s\n", args[0], set.Action, c.User())
		return nil
	})
}

func vaultListCmd(env Env) *cobra.Command {
	return jsonCmd(env, &cobra.Command{
		Use:   "list",
		Short: "List the names of your secrets (never their values)",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		out, err := c.ListSecrets(cmd.Context())
		if err != nil {
			return err
		}
		list := out.Secrets
		if asJSON {
			return printJSON(env.Stdout, list)
		}
		if len(list) == 0 {
			fmt.Fprintf(env.Stdout, "%s has no secrets; set one with `duet vault set %sNAME`\n", c.User(), asFlag(cmd))
		}
		for _, s := range list {
			fmt.Fprintf(env.Stdout, "%s\tupdated %s\n", s.Name, s.UpdatedAt.Format(time.RFC3339))
		}
		return nil
	})
}

func vaultDeleteCmd(env Env) *cobra.Command {
	return argCmd(env, "delete NAME", "Delete one of your secrets", client.Client.DeleteSecret,
		func(user, name string) string { return "secret " + name + " deleted for " + user })
}
