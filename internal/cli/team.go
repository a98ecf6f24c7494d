package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

func teamCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "team",
		Short: "Teams: members, tasks and assets shared with them, and the MCP servers they depend on",
		Long: `team manages teams. Share a task or an asset with a whole team by sharing it with
team:NAME (duet task share TASK --with team:qa; duet asset add ... --share-with team:qa);
hand a task to a team with duet task transfer TASK --to team:qa. The team must exist:
a share is bound to it, and goes when it is deleted. Every member sees what is shared
with the team, as the team is at that moment: adding or removing a member takes
effect at once.

Members have roles. Every member adds members and may leave; a maintainer also
removes members and changes the MCP dependency list; an owner also changes roles
(duet team role), removes maintainers and owners, and deletes the team. The creator
is the first owner, and a team always keeps one.

A team's MCP dependency list names the servers its members should register (address,
serverKey, description, tools; never a credential). A new member sees it with
"duet team show" and registers a server with their own credentials in one step with
"duet team register", pinned to the address they checked. See docs/teams.md.`,
	}, teamCreateCmd(env), teamAddCmd(env), teamRemoveCmd(env), teamRoleCmd(env), teamDeleteCmd(env), teamListCmd(env), teamShowCmd(env),
		teamServerCmd(env), teamRegisterCmd(env))
}

func teamCreateCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use: "create NAME", Short: "Create a team (you are its first member and owner)", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		t, err := c.CreateTeam(cmd.Context(), api.TeamIn{Name: args[0]})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "created team %s, owned by %s (share with it as %s)\n", t.Name, c.User(), duet.TeamPrincipal(t.Name))
		return nil
	})
}

func teamAddCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use: "add TEAM USER...", Short: "Add members to a team you are in (as members)", Args: cobra.MinimumNArgs(2),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		for _, u := range args[1:] {
			if _, err := c.AddMember(cmd.Context(), args[0], api.MemberIn{User: u}); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "added %s to team %s\n", u, args[0])
		}
		return nil
	})
}

func teamRemoveCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use: "remove TEAM USER", Short: "Remove a member (maintainers remove members, owners anyone), or yourself to leave; at once they stop seeing what is shared with it", Args: cobra.ExactArgs(2),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		if err := c.RemoveMember(cmd.Context(), args[0], args[1]); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "removed %s from team %s\n", args[1], args[0])
		return nil
	})
}

func teamRoleCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use: "role TEAM USER owner|maintainer|member", Short: "Give a member a role (you must be an owner; a team keeps an owner)", Args: cobra.ExactArgs(3),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		if _, err := c.SetRole(cmd.Context(), args[0], args[1], api.RoleIn{Role: duet.TeamRole(args[2])}); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s is now %s of team %s\n", args[1], args[2], args[0])
		return nil
	})
}

func teamDeleteCmd(env Env) *cobra.Command {
	return argCmd(env, "delete TEAM", "Delete a team you own, with its dependency list and every share with it (it must own no task)", client.Client.DeleteTeam,
		func(_, team string) string {
			return "deleted team " + team + ": what was shared with it is no longer shared through it"
		})
}

// memberList is "alice (owner), bob (member)".
func memberList(t *duet.Team) string {
	parts := make([]string, 0, len(t.Members))
	for _, m := range t.Members {
		parts = append(parts, m+" ("+string(t.Role(m))+")")
	}
	return strings.Join(parts, ", ")
}

func teamListCmd(env Env) *cobra.Command {
	return jsonCmd(env, &cobra.Command{
		Use: "list", Short: "List your teams and their members", Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		list, err := c.ListTeams(cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, list.Teams)
		}
		for _, t := range list.Teams {
			fmt.Fprintf(env.Stdout, "%s  members: %s\n", t.Name, memberList(t))
		}
		fmt.Fprintf(env.Stdout, "%d team(s)\n", len(list.Teams))
		return nil
	})
}

// teamDependency is an entry of a team's dependency list as one member
// sees it: registered by them (under which name) or not.
type teamDependency struct {
	*duet.TeamServer
	RegisteredAs string `json:"registeredAs,omitempty"` // your registration of that serverKey, if any
}

func teamShowCmd(env Env) *cobra.Command {
	return jsonCmd(env, &cobra.Command{
		Use: "show TEAM", Short: "Show a team: members and the MCP servers to register (which you have)", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
		ctx := cmd.Context()
		d, err := c.GetTeam(ctx, args[0])
		if err != nil {
			return err
		}
		mine, err := c.ListServers(ctx)
		if err != nil {
			return err
		}
		t, user := d.Team, c.User()
		out := []teamDependency{}
		for _, dep := range d.Servers {
			td := teamDependency{TeamServer: dep}
			if i := slices.IndexFunc(mine.Servers, func(s api.ServerView) bool { return s.ServerKey == dep.ServerKey }); i >= 0 {
				td.RegisteredAs = mine.Servers[i].Name
			}
			out = append(out, td)
		}
		if asJSON {
			return printJSON(env.Stdout, struct {
				*duet.Team
				Servers []teamDependency `json:"servers"`
			}{t, out})
		}
		w := env.Stdout
		fmt.Fprintf(w, "team %s (created by %s; you are %s)\n  members  %s\n  servers to register:\n", t.Name, t.CreatedBy, t.Role(user), memberList(t))
		var missing []teamDependency
		for _, d := range out {
			state := "registered by you as " + d.RegisteredAs
			if d.RegisteredAs == "" {
				state, missing = "NOT registered by you", append(missing, d)
			}
			fmt.Fprintf(w, "  - %s  %s  %s (%d tools, listed by %s): %s\n", d.Name, d.URL, d.ServerKey, len(d.Tools), d.AddedBy, state)
			if d.Description != "" {
				fmt.Fprintf(w, "      %s\n", escape.Text(d.Description))
			}
		}
		if len(out) == 0 {
			fmt.Fprintln(w, "    (none)")
		}
		if len(missing) > 0 {
			fmt.Fprintln(w, "register them with your own credentials (the token in an environment variable, or --header-env H=VAR):")
			for _, d := range missing {
				fmt.Fprintf(w, "  duet team register %s %s %s--url %s --bearer-token-env VAR\n", t.Name, shellQuote(d.Name), asFlag(cmd), shellQuote(d.URL))
			}
		}
		return nil
	})
}

func teamServerCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "server", Short: "Edit a team's MCP dependency list (maintainers and owners)"}
	var from, description string
	add := clientCmd(env, &cobra.Command{
		Use: "add TEAM --from YOUR_SERVER [--description TEXT]", Short: "Add one of your registered servers to the team's list (address and tools; never your credentials)",
		Args:    cobra.ExactArgs(1),
		PreRunE: needs(&from, "team server add needs --from YOUR_SERVER"),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		ts, err := c.AddTeamServer(cmd.Context(), args[0], api.TeamServerIn{From: from, Description: description})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "team %s now lists %s (%s, %d tools)\n", ts.Team, ts.Name, ts.ServerKey, len(ts.Tools))
		return nil
	})
	add.Flags().StringVar(&from, "from", "", "your registered server (name or serverKey) to list")
	add.Flags().StringVar(&description, "description", "", "what the team uses it for")
	remove := clientCmd(env, &cobra.Command{
		Use: "remove TEAM NAME", Short: "Remove a server from the team's list", Args: cobra.ExactArgs(2),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		if err := c.RemoveTeamServer(cmd.Context(), args[0], args[1]); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "removed %s from team %s's servers\n", args[1], args[0])
		return nil
	})
	return group(cmd, add, remove)
}

func teamRegisterCmd(env Env) *cobra.Command {
	var bearerEnv, address string
	var headerEnvs []string
	cmd := &cobra.Command{
		Use:   "register TEAM SERVER --url ADDRESS [--bearer-token-env VAR] [--header-env 'Header-Name=VAR' ...]",
		Short: "Register a server of the team's list with your own credentials and archive its tools",
		Long: `register takes SERVER from TEAM's dependency list and registers it for --as under
the same name, with credentials read from environment variables of this process
(never from argv), then archives its tools. The credentials are yours alone: nothing
of them is shared with the team.

--url is the address you expect your credentials to go to, as "duet team show" prints
it (any spelling of the same server): the registration is pinned to it, and refused
(CONFLICT, nothing sent) when the list names another server by now. Without --url,
register prints the entry's address and stops.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			headers := map[string]string{}
			defer clear(headers)
			if bearerEnv != "" {
				v := env.Getenv(bearerEnv)
				if v == "" {
					return usage("--bearer-token-env %s: the variable %s is empty or not set", bearerEnv, bearerEnv)
				}
				headers["Authorization"] = "Bearer " + v
			}
			for _, he := range headerEnvs {
				h, v, ok := strings.Cut(he, "=")
				if !ok || strings.TrimSpace(h) == "" || env.Getenv(strings.TrimSpace(v)) == "" {
					return usage("--header-env wants Header-Name=VAR with VAR set, got %q", he)
				}
				headers[strings.TrimSpace(h)] = env.Getenv(strings.TrimSpace(v))
			}
			return withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
				ctx := cmd.Context()
				td, err := c.GetTeam(ctx, args[0])
				if err != nil {
					return err
				}
				i := slices.IndexFunc(td.Servers, func(d *duet.TeamServer) bool { return d.Name == args[1] || d.ServerKey == args[1] })
				if i < 0 {
					return duet.Errorf(duet.CodeNotFound, "team %s lists no server %q", args[0], args[1])
				}
				d := td.Servers[i]
				if strings.TrimSpace(address) == "" {
					return usage("team %s lists %s at %s (serverKey %s, listed by %s): if that is where your credentials should go, repeat with --url %s",
						d.Team, d.Name, d.URL, d.ServerKey, d.AddedBy, shellQuote(d.URL))
				}
				fmt.Fprintf(env.Stderr, "registering %s from team %s: your credentials go to %s (serverKey %s, listed by %s)\n", d.Name, d.Team, d.URL, d.ServerKey, d.AddedBy)
				s, err := c.RegisterTeamServer(ctx, args[0], d.Name, api.TeamRegisterIn{URL: address, Credentials: api.Credentials{Headers: headers}})
				if err != nil {
					if _, gerr := c.GetServer(ctx, d.Name); gerr == nil {
						fmt.Fprintf(env.Stderr, "registered %s, but its catalog could not be synced; fix the cause and run `duet server sync %s%s`\n", d.Name, asFlag(cmd), d.Name)
					}
					return err
				}
				fmt.Fprintf(env.Stdout, "registered %s for %s from team %s: %s, %d tools\n", s.Server.Name, c.User(), args[0], s.Server.ServerKey, s.Server.ToolCount)
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&address, "url", "", "the address your credentials may go to, as duet team show prints it (required: the registration is pinned to it)")
	cmd.Flags().StringVar(&bearerEnv, "bearer-token-env", "", "environment variable holding your bearer token")
	cmd.Flags().StringArrayVar(&headerEnvs, "header-env", nil, "Header-Name=VAR: send header Header-Name with the value of environment variable VAR (repeatable)")
	addAs(cmd)
	return cmd
}

func taskTransferCmd(env Env) *cobra.Command {
	var to string
	cmd := clientCmd(env, &cobra.Command{
		Use:   "transfer TASK --to USER|team:NAME",
		Short: "Hand a task you own to another user or a team (recorded in the audit and the task's history)",
		Long: `transfer makes --to the owner of TASK. The task's shares stay; you keep only what
they give you (nothing, unless the task is shared with you or a team of yours). Runs
always execute as the person who starts them, so the new owner's runs use their own
MCP registrations and credentials.`,
		Args:    cobra.ExactArgs(1),
		PreRunE: needs(&to, "task transfer needs --to USER or --to team:NAME"),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		ctx := cmd.Context()
		got, err := c.GetTask(ctx, args[0])
		if err != nil {
			return err
		}
		tr, err := c.TransferTask(ctx, got.Task.ID, api.TransferIn{To: to})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "task %s %q now belongs to %s (was %s)\n", got.Task.ID, got.Task.Name, tr.To, tr.From)
		return nil
	})
	cmd.Flags().StringVar(&to, "to", "", "the new owner: a user id or team:NAME")
	return cmd
}
