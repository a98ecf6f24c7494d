package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	neturl "net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/serverkey"
)

func serverCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "server",
		Short: "Your registry of remote MCP servers: add, login, list, show, sync, call, remove, invocations",
		Long: `server manages the MCP servers you (--as) registered. Test cases refer to a
server by its serverKey, a fingerprint of its normalized URL that is the same for
everyone who registers that address; every call resolves the executor's own
registration and credentials, never the case author's.

Credentials are read from environment variables named on the command line (so they
never appear in argv or shell history), encrypted with the master key and never shown
again. Servers protected by OAuth are registered with --auth oauth and authorized once
with "duet server login". See docs/mcp-client.md.`,
	}, serverAddCmd(env), serverLoginCmd(env), serverListCmd(env), serverShowCmd(env), serverRemoveCmd(env),
		serverSyncCmd(env), serverCallCmd(env), serverInvocationsCmd(env), serverDiffCmd(env))
}

func serverAddCmd(env Env) *cobra.Command {
	var name, url, bearerEnv, authMode, clientIDEnv, clientSecretEnv, clientKeyEnv, metadataURL, issuer string
	var headerEnvs, scopes []string
	var replace, noSync, asJSON bool
	cmd := &cobra.Command{
		Use:   "add --name NAME --url URL [--bearer-token-env VAR] [--header-env 'Header-Name=VAR' ...] [--auth oauth|client-credentials ...]",
		Short: "Register an MCP server and archive its tool catalog",
		Long: `add registers the MCP server at --url under --name for --as, then connects with
those credentials and archives its tool catalog (every page of tools/list).

Credentials come from environment variables of this process:
  --bearer-token-env VAR        sends "Authorization: Bearer $VAR"
  --header-env 'X-Api-Key=VAR'  sends "X-Api-Key: $VAR" (repeatable)
URLs that carry a credential in their query (token=, api_key=, sig=, ...) are refused.
If the catalog cannot be synced, the registration is kept and the error is shown
(exit 1); fix the cause and run "duet server sync NAME".

Servers protected by OAuth 2.1 (the MCP authorization spec):
  --auth oauth                  calls run as --as, who authorizes Duet once in a browser
                                with "duet server login --as USER NAME" (authorization
                                code + PKCE); tokens are encrypted and refreshed
      --client-id-env VAR       a client pre-registered at the authorization server
      --client-secret-env VAR   ... and its secret (confidential clients)
      --client-metadata-url URL a client ID metadata document describing Duet (https)
                                without these, Duet registers itself dynamically
  --auth client-credentials     a machine identity (no person): the client credentials
                                grant with --client-id-env and either --client-secret-env
                                or --client-key-env VAR (a PEM private key: private_key_jwt)
  --scope S                     request scope S too (repeatable)
  --issuer URL                  the authorization server a pre-registered client belongs
                                to (required with --client-secret-env or --client-key-env;
                                for a public client, without it the one found at the first
                                authorization is pinned). The client's credentials go to no other.
The authorization server is found from the server's metadata; every address Duet
contacts passes the same network guard as the server itself. OAuth needs an https
URL (http only for loopback addresses).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" || url == "" {
				return usage("server add needs --name and --url")
			}
			headers := map[string]string{}
			defer clear(headers)
			if bearerEnv != "" {
				v := env.Getenv(bearerEnv)
				if v == "" {
					return usage("--bearer-token-env %s: the variable %s is empty or not set; set it for this command: %s=TOKEN duet server add ...", bearerEnv, bearerEnv, bearerEnv)
				}
				headers["Authorization"] = "Bearer " + v
			}
			for _, he := range headerEnvs {
				h, v, ok := strings.Cut(he, "=")
				if !ok || strings.TrimSpace(h) == "" || strings.TrimSpace(v) == "" {
					return usage("--header-env wants Header-Name=VAR, got %q", he)
				}
				h, v = strings.TrimSpace(h), strings.TrimSpace(v)
				val := env.Getenv(v)
				if val == "" {
					return usage("--header-env %s: the variable %s is empty or not set; set it for this command: %s=VALUE duet server add ...", he, v, v)
				}
				if strings.EqualFold(h, "Authorization") && bearerEnv != "" {
					return usage("use either --bearer-token-env or --header-env Authorization=VAR, not both")
				}
				headers[h] = val
			}
			oauth, err := oauthFlags(env, authMode, clientIDEnv, clientSecretEnv, clientKeyEnv, metadataURL, scopes)
			if err != nil {
				return err
			}
			if oauth != nil && bearerEnv != "" {
				return usage("--auth %s obtains the bearer token itself; drop --bearer-token-env", authMode)
			}
			if issuer != "" && oauth == nil {
				return usage("--issuer needs --auth oauth or --auth client-credentials")
			} else if oauth != nil {
				oauth.Issuer = issuer
			}
			if oauth != nil && (oauth.ClientSecret != "" || oauth.PrivateKey != "") && issuer == "" {
				return usage("%s", issuerHint(url))
			}
			return withClient(env, func(cmd *cobra.Command, _ []string, c client.Client) error {
				ctx := cmd.Context()
				in := api.RegisterIn{Name: name, URL: url, Credentials: api.Credentials{Headers: headers}, OAuth: oauth, Replace: replace, NoSync: true}
				d, err := c.RegisterServer(ctx, in)
				if oauth != nil {
					oauth.ClientSecret, oauth.PrivateKey = "", ""
				}
				if duet.ErrorCode(err) == duet.CodeConflict {
					return conflictHint(cmd, c, err)
				} else if err != nil {
					return err
				}
				var syncErr error
				// A person's authorization comes first: server login syncs.
				if !noSync && d.Server.Auth != duet.AuthOAuth {
					var synced api.ServerDetail
					if synced, syncErr = c.SyncServer(ctx, d.Server.Name); syncErr == nil {
						d = synced
					}
				}
				s := d.Server
				if asJSON {
					if err := printJSON(env.Stdout, d); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(env.Stdout, "registered MCP server %q for %s\n  url        %s\n  serverKey  %s\n", s.Name, c.User(), s.URL, s.ServerKey)
					if len(s.HeaderNames) > 0 {
						fmt.Fprintf(env.Stdout, "  headers    %s (encrypted)\n", strings.Join(s.HeaderNames, ", "))
					}
					if s.Auth != "" {
						fmt.Fprintf(env.Stdout, "  auth       %s (client configuration encrypted)\n", s.Auth)
					}
					if s.SyncedAt != nil {
						fmt.Fprintf(env.Stdout, "  catalog    %d tools (%s, protocol %s, %s %s)\n", s.ToolCount, s.Transport, escape.Text(s.ProtocolVersion),
							escape.Text(orDash(s.ServerName)), escape.Text(s.ServerVersion))
					}
				}
				if s.Auth == duet.AuthOAuth {
					fmt.Fprintf(env.Stderr, "next: authorize Duet to call %s as %s: `duet server login %s%s` (it also syncs the catalog)\n", s.Name, c.User(), asFlag(cmd), s.Name)
				}
				if syncErr != nil {
					fmt.Fprintf(env.Stderr, "the registration is kept, but its catalog could not be synced; fix the cause and run `duet server sync %s%s`\n", asFlag(cmd), s.Name)
					return syncErr
				}
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "your name for the server (unique among your servers)")
	cmd.Flags().StringVar(&url, "url", "", "the server's MCP endpoint (Streamable HTTP, or legacy SSE)")
	cmd.Flags().StringVar(&bearerEnv, "bearer-token-env", "", "environment variable holding a bearer token")
	cmd.Flags().StringArrayVar(&headerEnvs, "header-env", nil, "Header-Name=VAR: send header Header-Name with the value of environment variable VAR (repeatable)")
	cmd.Flags().StringVar(&authMode, "auth", "", "oauth (a person authorizes once with \"duet server login\") or client-credentials (a machine identity); default: the static headers")
	cmd.Flags().StringVar(&clientIDEnv, "client-id-env", "", "environment variable holding a pre-registered OAuth client id")
	cmd.Flags().StringVar(&clientSecretEnv, "client-secret-env", "", "environment variable holding the OAuth client's secret")
	cmd.Flags().StringVar(&clientKeyEnv, "client-key-env", "", "environment variable holding the OAuth client's PEM private key (client-credentials with private_key_jwt)")
	cmd.Flags().StringVar(&metadataURL, "client-metadata-url", "", "https URL of a client ID metadata document describing Duet (--auth oauth)")
	cmd.Flags().StringArrayVar(&scopes, "scope", nil, "an OAuth scope to request besides the ones the server asks for (repeatable)")
	cmd.Flags().StringVar(&issuer, "issuer", "", "the authorization server (issuer URL) the pre-registered OAuth client belongs to; required with a client secret or key (a public client: pinned at the first authorization)")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace your registration with the same name (new URL and credentials)")
	cmd.Flags().BoolVar(&noSync, "no-sync", false, "register only; do not contact the server")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the registration as JSON")
	addAs(cmd)
	return cmd
}

// issuerHint is the usage error of a client secret or key given without
// --issuer: the secret is bound to its authorization server when it is
// entered (docs/mcp-client.md), and this says where to find that server.
func issuerHint(serverURL string) string {
	prm := "https://HOST/.well-known/oauth-protected-resource/PATH"
	if u, err := neturl.Parse(serverURL); err == nil && u.Host != "" {
		prm = u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.EscapedPath(), "/")
	}
	return "--client-secret-env and --client-key-env need --issuer URL: a client secret or key goes only to the authorization server it was registered with, " +
		"and Duet does not take the server's word for which one that is. Give the issuer of the authorization server where the client was registered " +
		"(its console shows it; it is the \"issuer\" of https://AUTH-SERVER/.well-known/oauth-authorization-server). " +
		"The MCP server names its authorization server under \"authorization_servers\" at " + escape.Text(prm) +
		": use it only if it is that same server"
}

// oauthFlags builds the OAuth configuration of server add from its flags,
// reading the secrets from the named environment variables.
func oauthFlags(env Env, mode, idEnv, secretEnv, keyEnv, metadataURL string, scopes []string) (*api.OAuthIn, error) {
	switch mode {
	case "", "headers":
		if idEnv != "" || secretEnv != "" || keyEnv != "" || metadataURL != "" || len(scopes) > 0 {
			return nil, usage("--client-id-env, --client-secret-env, --client-key-env, --client-metadata-url and --scope need --auth oauth or --auth client-credentials")
		}
		return nil, nil
	case duet.AuthOAuth, duet.AuthClientCredentials:
	default:
		return nil, usage("--auth %s: want oauth or client-credentials", mode)
	}
	read := func(flag, name string) (string, error) {
		if name == "" {
			return "", nil
		}
		v := env.Getenv(name)
		if strings.TrimSpace(v) == "" {
			return "", usage("%s %s: the variable %s is empty or not set", flag, name, name)
		}
		return v, nil
	}
	o := &api.OAuthIn{Grant: mode, ClientMetadataURL: metadataURL}
	var err error
	if o.ClientID, err = read("--client-id-env", idEnv); err != nil {
		return nil, err
	}
	o.ClientID = strings.TrimSpace(o.ClientID)
	if o.ClientSecret, err = read("--client-secret-env", secretEnv); err != nil {
		return nil, err
	}
	if o.PrivateKey, err = read("--client-key-env", keyEnv); err != nil {
		return nil, err
	}
	for _, s := range scopes {
		o.Scopes = append(o.Scopes, strings.Fields(s)...)
	}
	return o, nil
}

func serverLoginCmd(env Env) *cobra.Command {
	var timeout time.Duration
	var port int
	var noSync bool
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Authorize Duet to call an OAuth-protected server as you (opens nothing: prints the URL)",
		Long: `login authorizes Duet to call your server NAME (registered with --auth oauth) as
--as. It prints the authorization server's URL: open it in a browser, sign in and
approve. The browser is then sent back to http://127.0.0.1:PORT/callback, where this
command listens (--port, default a free one) for at most --timeout. The tokens it
receives are encrypted with the master key; calls use them and refresh them. Then the
catalog is synced (unless --no-sync).

Run it again when a call fails with MCP_AUTH_FAILED asking for it: the refresh token
expired, or a tool needs more scopes (they are requested this time).
For --auth client-credentials, login fetches a token at once (no browser), here or
against a Duet server (--server). A person's authorization (--auth oauth) is made by
the process that keeps the tokens: run it on the server's machine, against its
DUET_HOME or database.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usage("--timeout must be positive")
			}
			if port < 0 || port > 65535 {
				return usage("--port must be 0 (any free port) or a port number")
			}
			return withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				reg, err := c.GetServer(ctx, args[0])
				if err != nil {
					return err
				}
				name := reg.Server.Name
				in := api.LoginIn{NoSync: noSync}
				if reg.Server.Auth == duet.AuthOAuth {
					if c.Server() != "" {
						return &exitError{2, fmt.Errorf("%s is authorized by a person at a browser, through the process that keeps its tokens: "+
							"run `duet server login %s` on the machine of %s (its DUET_HOME or database), as %s", name, name, c.Server(), c.User())}
					}
					ln, err := mcpclient.ListenLoopback(port, func(authURL string) {
						fmt.Fprintf(env.Stdout, "Open this URL in a browser to authorize Duet to call %s as %s:\n\n  %s\n\nwaiting up to %s for the authorization server to send the browser back...\n",
							name, c.User(), authURL, timeout)
					})
					if err != nil {
						return err
					}
					defer ln.Close()
					in.Authorizer = ln.Authorizer()
				}
				d, err := c.LoginServer(ctx, name, in)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "authorized: %s\n", describeAuth(d.AuthStatus, "duet server login "+asFlag(cmd)+name))
				if !noSync {
					s := d.Server
					fmt.Fprintf(env.Stdout, "synced %s: %d tools (%s, protocol %s)\n", s.Name, s.ToolCount, s.Transport, escape.Text(s.ProtocolVersion))
				}
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the authorization")
	cmd.Flags().IntVar(&port, "port", 0, "the loopback port of the redirect URI (0: any free port)")
	cmd.Flags().BoolVar(&noSync, "no-sync", false, "authorize only; do not sync the catalog")
	addAs(cmd)
	return cmd
}

// describeAuth says what an OAuth authorization holds, without secrets;
// login is the command that authorizes again.
// What the authorization server chose (scopes, client id, issuer) is
// escaped: it may carry terminal control sequences.
func describeAuth(st *mcpclient.AuthStatus, login string) string {
	if st == nil {
		return "none"
	}
	if !st.Authorized {
		s := st.Auth + ", not authorized yet"
		if st.Auth == duet.AuthOAuth {
			s += " (run `" + login + "`)"
		}
		return s
	}
	parts := []string{st.Auth}
	if len(st.Scopes) > 0 {
		parts = append(parts, "scopes "+escape.Text(strings.Join(slices.Sorted(slices.Values(st.Scopes)), " ")))
	} else {
		parts = append(parts, "no scopes named")
	}
	if st.Expires != nil {
		parts = append(parts, "token valid until "+st.Expires.Local().Format("2006-01-02 15:04:05"))
	}
	if st.Renewable {
		parts = append(parts, "renewed automatically")
	} else if st.Expires != nil {
		parts = append(parts, "not renewable: log in again when it expires")
	}
	if st.ClientID != "" {
		parts = append(parts, "client "+escape.Text(st.ClientID))
	}
	if st.Issuer != "" {
		parts = append(parts, "bound to issuer "+escape.Text(st.Issuer))
	}
	if len(st.Wanted) > 0 {
		parts = append(parts, "the server asked for more: "+escape.Text(strings.Join(st.Wanted, " "))+" (run `"+login+"`)")
	}
	return strings.Join(parts, "; ")
}

func serverListCmd(env Env) *cobra.Command {
	return jsonCmd(env, &cobra.Command{
		Use: "list", Short: "List your registered MCP servers", Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		list, err := c.ListServers(cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, list.Servers)
		}
		printTable(env.Stdout, "NAME\tSERVER KEY\tAUTH\tTOOLS\tSYNCED\tURL", list.Servers, func(s api.ServerView) string {
			return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s", s.Name, s.ServerKey, authKind(s), s.ToolCount, syncedAt(s.SyncedAt), s.URL)
		})
		fmt.Fprintf(env.Stdout, "%d server(s) registered by %s\n", len(list.Servers), c.User())
		if len(list.Servers) == 0 {
			fmt.Fprintf(env.Stderr, "register one: duet server add %s--name NAME --url URL --bearer-token-env VAR\n", asFlag(cmd))
			noneVisible(cmd, env)
		}
		return nil
	})
}

// authKind names how a registration authenticates.
func authKind(s api.ServerView) string {
	switch {
	case s.Auth != "":
		return s.Auth
	case len(s.HeaderNames) > 0:
		return "headers"
	}
	return "none"
}

func syncedAt(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func serverShowCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := clientCmd(env, &cobra.Command{
		Use: "show NAME", Short: "Show a registered server and its archived tools (no credential values)", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		d, err := c.GetServer(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, d)
		}
		s, w := d.Server, env.Stdout
		fmt.Fprintf(w, "%s\n  owner      %s\n  url        %s\n  serverKey  %s\n", s.Name, s.Owner, s.URL, s.ServerKey)
		if len(s.HeaderNames) > 0 {
			fmt.Fprintf(w, "  headers    %s (values encrypted)\n", strings.Join(s.HeaderNames, ", "))
		} else {
			fmt.Fprintf(w, "  headers    none\n")
		}
		if d.AuthStatus != nil {
			fmt.Fprintf(w, "  auth       %s\n", describeAuth(d.AuthStatus, "duet server login "+asFlag(cmd)+s.Name))
		}
		if s.SyncedAt == nil {
			fmt.Fprintf(w, "  catalog    never synced: run `duet server sync %s%s`\n", asFlag(cmd), s.Name)
			return nil
		}
		fmt.Fprintf(w, "  server     %s %s over %s, protocol %s\n  catalog    %d tools, synced %s, sha256 %s\n",
			escape.Text(orDash(s.ServerName)), escape.Text(s.ServerVersion), s.Transport, escape.Text(s.ProtocolVersion), s.ToolCount, syncedAt(s.SyncedAt), s.CatalogHash)
		for _, t := range d.Tools {
			hints := toolHints(t)
			desc := t.Description
			if len(desc) > 100 {
				desc = desc[:97] + "..."
			}
			fmt.Fprintf(w, "  - %s%s: %s\n", escape.Text(t.Name), hints, escape.Text(strings.ReplaceAll(desc, "\n", " ")))
		}
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (registration and tools with schemas)")
	return cmd
}

// printLines prints text from another party line by line, each escaped.
func printLines(w io.Writer, text string) {
	for line := range strings.SplitSeq(text, "\n") {
		fmt.Fprintln(w, escape.Text(strings.TrimSuffix(line, "\r")))
	}
}

func toolHints(t *duet.MCPTool) string {
	var a map[string]any
	if json.Unmarshal(t.Annotations, &a) != nil {
		return ""
	}
	var hints []string
	for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint"} {
		if v, _ := a[k].(bool); v {
			hints = append(hints, strings.TrimSuffix(k, "Hint"))
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " [" + strings.Join(hints, ", ") + "]"
}

func serverRemoveCmd(env Env) *cobra.Command {
	return argCmd(env, "remove NAME", "Remove a registration, its credentials and its catalog", client.Client.RemoveServer,
		func(user, name string) string {
			return fmt.Sprintf("removed MCP server %q of %s (credentials deleted)", name, user)
		})
}

func serverSyncCmd(env Env) *cobra.Command {
	return argResultCmd(env, "sync NAME", "Fetch and archive a server's tool catalog again", client.Client.SyncServer,
		func(d api.ServerDetail, _ string) string {
			s := d.Server
			return fmt.Sprintf("synced %s: %d tools (%s, protocol %s), sha256 %s", s.Name, s.ToolCount, s.Transport, escape.Text(s.ProtocolVersion), s.CatalogHash)
		})
}

func serverCallCmd(env Env) *cobra.Command {
	var argsJSON string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "call SERVER TOOL [--args JSON]",
		Short: "Call a tool of one of your servers, through the same invoke() a running case uses",
		Long: `call invokes TOOL of SERVER (your server's name or a serverKey) as --as, with
--args as the JSON object of arguments, and prints the result: the text content, then
structuredContent. --json prints {content, structuredContent, isError} as the server
sent it. Exit 1 when the call fails or the tool reports an error.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var arguments map[string]any
			if argsJSON != "" {
				dec := json.NewDecoder(strings.NewReader(argsJSON))
				dec.UseNumber()
				if err := dec.Decode(&arguments); err != nil || arguments == nil {
					return usage("--args must be a JSON object, like '{\"orderId\":\"A1001\"}'")
				}
			}
			return withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
				out, err := c.CallTool(cmd.Context(), args[0], args[1], api.CallIn{Arguments: arguments})
				if err != nil {
					return err
				}
				if res := out.Result; res != nil {
					if asJSON {
						printJSON(env.Stdout, res)
					} else {
						if text := res.Text(); text != "" {
							printLines(env.Stdout, text)
						}
						if len(res.StructuredContent) > 0 {
							var v any
							if json.Unmarshal(res.StructuredContent, &v) == nil {
								b, _ := json.MarshalIndent(v, "", "  ")
								printLines(env.Stdout, "structuredContent: "+string(b))
							}
						}
					}
				}
				if out.Error != nil {
					if out.Invocation != nil {
						fmt.Fprintf(env.Stderr, "trace %s\n", out.Invocation.TraceID)
					}
					return &duet.Error{Code: out.Error.Code, Message: out.Error.Message}
				}
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "", "arguments as a JSON object")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	addAs(cmd)
	return cmd
}

func serverInvocationsCmd(env Env) *cobra.Command {
	var in api.RecordsIn
	cmd := &cobra.Command{
		Use:   "invocations",
		Short: "Query invocation records: every call to a registered server (sizes, never values)",
		Long: `invocations lists the records of the calls made to MCP servers as --as (everyone's
for an administrator, DUET_ADMINS; --executor names one), newest first.`,
	}
	cmd.Flags().StringVar(&in.User, "executor", "", "only calls made as this user (administrators; others see their own)")
	cmd.Flags().StringVar(&in.Server, "mcp-server", "", "only calls to this MCP server (a serverKey, or the name of one of your servers)")
	cmd.Flags().StringVar(&in.Tool, "tool", "", "only calls of this tool")
	cmd.Flags().StringVar(&in.Source, "source", "", "only this call source (cli, engine, post-run, agent, web, api)")
	cmd.Flags().StringVar(&in.Outcome, "outcome", "", "only this outcome (OK or an error code)")
	return recordsCmd(env, cmd, &in, "at most this many records",
		func(ctx context.Context, c client.Client, in api.RecordsIn) ([]*duet.Invocation, error) {
			list, err := c.ListInvocations(ctx, in)
			return list.Records, err
		},
		"TIME\tSOURCE\tEXECUTOR\tSERVER KEY\tTOOL\tOUTCOME\tMS\tARGS\tRESULT\tTRACE",
		func(r *duet.Invocation) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t%d\t%s", r.Time.Local().Format(recordTime), r.Source,
				r.Executor, r.ServerKey, r.Tool, r.Outcome, float64(r.DurationUs)/1000, r.ArgBytes, r.ResultBytes, r.TraceID)
		})
}

// conflictHint follows the CONFLICT of server add with the ways out, as
// commands: the registration with that name, or of that address, already
// exists.
func conflictHint(cmd *cobra.Command, c client.Client, err error) error {
	ctx := cmd.Context()
	name, _ := cmd.Flags().GetString("name")
	url, _ := cmd.Flags().GetString("url")
	as := asFlag(cmd)
	if old, ferr := c.GetServer(ctx, name); ferr == nil && old.Server.Name == name {
		return &hintError{err, fmt.Sprintf("next: replace %s's URL and credentials: `%s --replace`\n  or pick another --name", name, commandLine(cmd, nil))}
	}
	key, kerr := serverkey.Key(url)
	if kerr != nil {
		return err
	}
	old, ferr := c.GetServer(ctx, key)
	if ferr != nil {
		return err
	}
	return &hintError{err, fmt.Sprintf("next: use %[1]q as it is: `duet server show %[2]s%[1]s`\n"+
		"  or give it these credentials: `%[3]s --replace`\n"+
		"  or remove it, then run this command again: `duet server remove %[2]s%[1]s`",
		old.Server.Name, as, commandLine(cmd, map[string]string{"name": old.Server.Name}))}
}

// commandLine is the command line of cmd as the user typed it (flags in
// their usual order, values quoted for a POSIX shell), with the flags of
// override set to other values.
func commandLine(cmd *cobra.Command, override map[string]string) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		if v, ok := override[f.Name]; ok {
			parts = append(parts, "--"+f.Name, shellQuote(v))
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				parts = append(parts, "--"+f.Name, shellQuote(v))
			}
			return
		}
		if f.Value.Type() == "bool" {
			parts = append(parts, "--"+f.Name+"="+f.Value.String())
			return
		}
		parts = append(parts, "--"+f.Name, shellQuote(f.Value.String()))
	})
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
