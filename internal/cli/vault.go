package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
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
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, _ string) error {
			_, info, err := a.Keyring(env.Getenv)
			if err != nil {
				return err
			}
			if info.Generated {
				fmt.Fprintf(env.Stderr, "generated a new master key at %s; back it up: without it stored credentials cannot be decrypted\n", info.Path)
			}
			actx, done := auditing(cmd.Context(), a, asUser(cmd, a.Config), "vault.rotate", "")
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
			res, err := a.MCPClient.Rewrap(actx)
			done(err)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "re-encrypted %d of %d credential(s) under key %s\n", res.Rewrapped, res.Total, res.PrimaryID)
			replaced, total, err := a.Secrets.Rewrap(actx)
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
	cmd.AddCommand(rotate, vaultSetCmd(env), vaultListCmd(env), vaultDeleteCmd(env))
	return cmd
}

func vaultSetCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Set one of your secrets from standard input (steps of the runs you execute read it as ${secrets.NAME})",
		Long: `set stores the value read from standard input (one trailing newline dropped) as
your secret NAME, sealed under the master key. The steps of every run you execute
read it as ${secrets.NAME}; it is never written in a task, and every run redacts
it by value from what it keeps. Pipe the value in so it stays out of your shell
history: printf %s "$PASSWORD" | duet vault set SHOP_PASSWORD`,
		Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			b, err := io.ReadAll(io.LimitReader(env.Stdin, duet.MaxSecretBytes+2))
			if err != nil {
				return err
			}
			value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			clear(b)
			actx, done := auditing(cmd.Context(), a, user, "vault.secret.set", args[0])
			action, err := a.Secrets.Set(actx, user, args[0], value)
			done(err)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "secret %s %s for %s\n", args[0], action, user)
			return nil
		}),
	}
	addAs(cmd)
	return cmd
}

func vaultListCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the names of your secrets (never their values)",
		Args:  cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, user string) error {
			list, err := a.Secrets.List(cmd.Context(), user)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintf(env.Stdout, "%s has no secrets; set one with `duet vault set NAME`\n", user)
			}
			for _, s := range list {
				fmt.Fprintf(env.Stdout, "%s\tupdated %s\n", s.Name, s.UpdatedAt.Format(time.RFC3339))
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	addAs(cmd)
	return cmd
}

func vaultDeleteCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete one of your secrets",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			actx, done := auditing(cmd.Context(), a, user, "vault.secret.delete", args[0])
			err := a.Secrets.Delete(actx, user, args[0])
			done(err)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "secret %s deleted for %s\n", args[0], user)
			return nil
		}),
	}
	addAs(cmd)
	return cmd
}
