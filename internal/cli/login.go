package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/config"
)

// Remote mode: `duet --server URL` (or DUET_SERVER_URL) acts on a Duet
// server through its REST API with a personal access token — DUET_TOKEN
// (DUET_TOKEN_FILE), else the one `duet login URL` stored for that server
// in the user's configuration directory (tokens.json, mode 0600).

// savedTokens is the file `duet login` keeps.
type savedTokens struct {
	Servers map[string]savedToken `json:"servers"`
}

type savedToken struct {
	Token   string    `json:"token"`
	User    string    `json:"user"`
	SavedAt time.Time `json:"savedAt"`
}

// configDir is the user's configuration directory for Duet:
// $XDG_CONFIG_HOME/duet, else os.UserConfigDir()/duet.
func configDir(env Env) (string, error) {
	if x := env.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "duet"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", usage("no configuration directory to keep the token in (%v): set XDG_CONFIG_HOME, or give the token in DUET_TOKEN", err)
	}
	return filepath.Join(d, "duet"), nil
}

func tokensFile(env Env) (string, error) {
	d, err := configDir(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "tokens.json"), nil
}

func readTokens(env Env) (savedTokens, string, error) {
	path, err := tokensFile(env)
	if err != nil {
		return savedTokens{}, "", err
	}
	st := savedTokens{Servers: map[string]savedToken{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, path, nil
	case err != nil:
		return st, path, usage("cannot read %s: %v", path, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, path, usage("%s is not a token file of duet login (%v): remove it and log in again", path, err)
	}
	if st.Servers == nil {
		st.Servers = map[string]savedToken{}
	}
	return st, path, nil
}

// writeTokens writes the token file: readable by the user alone, replaced
// at once.
func writeTokens(path string, st savedTokens) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return usage("cannot create %s: %v", filepath.Dir(path), err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tokens-*.json")
	if err != nil {
		return usage("cannot write in %s: %v", filepath.Dir(path), err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// dialServer connects to the Duet server at server with DUET_TOKEN, else
// the token duet login stored for it. The command acts as the token's
// user: an --as that names someone else is a usage error.
func dialServer(cmd *cobra.Command, env Env, cfg *config.Config, server string) (client.Client, error) {
	base, err := client.ParseServerURL(server)
	if err != nil {
		note := ""
		if !strings.Contains(server, "://") {
			note = " (--server names the Duet server to act on; an MCP server is --mcp-server NAME)"
		}
		return nil, usage("--server (or DUET_SERVER_URL): %s%s", duet.ErrorMessage(err), note)
	}
	token, from := cfg.Token, "DUET_TOKEN"
	if token == "" {
		st, _, err := readTokens(env)
		if err != nil {
			return nil, err
		}
		token, from = st.Servers[base].Token, "the token duet login kept"
	}
	c, err := client.Dial(cmd.Context(), base, token)
	if err != nil {
		return nil, err
	}
	if f := cmd.Flag("as"); f != nil && f.Value.String() != "" && f.Value.String() != c.User() {
		c.Close()
		return nil, usage("--as %s: against %s every command acts as the user of its token, %s (%s); to act as %s, use a token of %s",
			f.Value.String(), base, c.User(), from, f.Value.String(), f.Value.String())
	}
	if a, ok := cmd.Context().Value(actingKey{}).(*acting); ok {
		a.user, a.from, a.remote = c.User(), from+" at "+base, true
	}
	return c, nil
}

func loginCmd(env Env) *cobra.Command {
	var tokenEnv string
	cmd := &cobra.Command{
		Use:   "login URL [--token-env VAR]",
		Short: "Keep a personal access token for a Duet server: commands with --server URL then act there",
		Long: `login checks a personal access token with the Duet server at URL and keeps it in
your configuration directory (tokens.json under $XDG_CONFIG_HOME/duet or the system's
equivalent, readable by you alone). Commands given --server URL, or run with
DUET_SERVER_URL=URL, then act on that server, as the token's user, with the same
output and exit codes as on this machine. DUET_TOKEN (or DUET_TOKEN_FILE), when set,
is used instead of the kept token.

The token comes from the environment variable --token-env names, else from standard
input (paste it and press Enter). Create one in the server's console (Tokens), or
with "duet token create" against the server.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := client.ParseServerURL(args[0])
			if err != nil {
				return usage("%s", duet.ErrorMessage(err))
			}
			token := ""
			if tokenEnv != "" {
				if token = strings.TrimSpace(env.Getenv(tokenEnv)); token == "" {
					return usage("--token-env %s: the variable %s is empty or not set", tokenEnv, tokenEnv)
				}
			} else {
				fmt.Fprintf(env.Stderr, "paste a personal access token for %s (the console's Tokens page makes one) and press Enter:\n", base)
				line, err := bufio.NewReader(io.LimitReader(env.Stdin, 4096)).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return usage("cannot read the token from standard input: %v", err)
				}
				if token = strings.TrimSpace(line); token == "" {
					return usage("no token on standard input: paste one, or give --token-env VAR")
				}
			}
			c, err := client.Dial(cmd.Context(), base, token)
			if err != nil {
				return err
			}
			defer c.Close()
			st, path, err := readTokens(env)
			if err != nil {
				return err
			}
			st.Servers[base] = savedToken{Token: token, User: c.User(), SavedAt: time.Now().UTC()}
			if err := writeTokens(path, st); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "logged in to %s as %s (token kept in %s)\n", base, c.User(), path)
			fmt.Fprintf(env.Stdout, "act there with `duet --server %s COMMAND`, or for every command: export DUET_SERVER_URL=%s\n", base, base)
			return nil
		},
	}
	cmd.Flags().StringVar(&tokenEnv, "token-env", "", "environment variable holding the token (default: read it from standard input)")
	return cmd
}

func logoutCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "logout URL",
		Short: "Forget the token duet login kept for a Duet server (the token stays valid: revoke it with duet token revoke)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := client.ParseServerURL(args[0])
			if err != nil {
				return usage("%s", duet.ErrorMessage(err))
			}
			st, path, err := readTokens(env)
			if err != nil {
				return err
			}
			if _, ok := st.Servers[base]; !ok {
				fmt.Fprintf(env.Stdout, "no token kept for %s\n", base)
				return nil
			}
			delete(st.Servers, base)
			if err := writeTokens(path, st); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "forgot the token for %s (it is still valid until revoked: duet --server %s token revoke ID)\n", base, base)
			return nil
		},
	}
}
