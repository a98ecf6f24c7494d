package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

func assetCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "asset",
		Short: "Manage AI assets: skills, rules and prompts (and see your MCP servers beside them)",
		Long: `AI assets are what the test agent (duet generate) writes cases from:

  skill   how to test something; applied when named (duet generate --skill NAME)
  rule    a constraint every generated case follows (all your rules, always)
  prompt  a reusable instruction that starts a generation (duet generate --prompt NAME)

Assets are named and versioned: adding an asset that exists makes a new version
when its text or description changed. They are private to their owner unless
shared with users (--share-with bob,carol, or '*' for everyone). Refer to another
user's shared asset as owner/name. The MCP servers you registered appear beside
them as mcp-server and mcp-tool assets (names, descriptions, schemas; never
credentials).`,
	}, assetAddCmd(env), assetListCmd(env), assetShowCmd(env), assetRmCmd(env))
}

func parseKind(s string) (duet.AssetKind, error) {
	k := duet.AssetKind(strings.ToLower(strings.TrimSpace(s)))
	if !k.Valid() {
		return "", usage("unknown asset kind %q: want skill, rule or prompt", s)
	}
	return k, nil
}

func assetAddCmd(env Env) *cobra.Command {
	var file, text, description string
	var shareWith []string
	var private bool
	cmd := &cobra.Command{
		Use:   "add KIND NAME (-f FILE | --text TEXT)",
		Short: "Add an asset, or a new version of one (KIND: skill, rule or prompt)",
		Example: `  duet asset add skill checkout -f skills/checkout.md --description "pay for an order"
  duet asset add rule no-sleeps --text "Wait for a condition, never a fixed time." --share-with '*'
  echo "Write a smoke test of the main page." | duet asset add prompt smoke -f -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := parseKind(args[0])
			if err != nil {
				return err
			}
			var body string
			switch {
			case file != "" && text != "":
				return usage("use either -f FILE or --text, not both")
			case file == "-":
				b, err := io.ReadAll(io.LimitReader(env.Stdin, duet.MaxAssetBodyBytes+1))
				if err != nil {
					return usage("cannot read standard input: %v", err)
				}
				body = string(b)
			case file != "":
				b, err := os.ReadFile(file)
				if err != nil {
					return usage("cannot read %s: %v", file, err)
				}
				body = string(b)
			case text != "":
				body = text
			default:
				return usage("asset add needs the text: -f FILE (- for standard input) or --text TEXT")
			}
			if private && len(shareWith) > 0 {
				return usage("use either --private or --share-with, not both")
			}
			in := api.AssetIn{Kind: kind, Name: args[1], Description: description, Body: body}
			switch {
			case private:
				in.SharedWith = &[]string{}
			case len(shareWith) > 0:
				in.SharedWith = &shareWith
			}
			return withClient(env, func(cmd *cobra.Command, _ []string, c client.Client) error {
				saved, err := c.SaveAsset(cmd.Context(), in)
				if err != nil {
					return err
				}
				as := saved.Asset
				fmt.Fprintf(env.Stdout, "%s %s v%d: %s (%s)\n", as.Kind, as.Ref(), as.Version, saved.Action, visibility(as))
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "read the text from FILE (- for standard input)")
	cmd.Flags().StringVar(&text, "text", "", "the text itself")
	cmd.Flags().StringVar(&description, "description", "", "one line saying what it is for")
	cmd.Flags().StringSliceVar(&shareWith, "share-with", nil, "share with these users ('*' for everyone); replaces the sharing")
	cmd.Flags().BoolVar(&private, "private", false, "stop sharing it")
	addAs(cmd)
	return cmd
}

func visibility(a *duet.Asset) string {
	if len(a.SharedWith) == 0 {
		return "private"
	}
	return "shared with " + strings.Join(a.SharedWith, ", ")
}

func assetListCmd(env Env) *cobra.Command {
	var kind string
	cmd := jsonCmd(env, &cobra.Command{
		Use:   "list",
		Short: "List the assets you can use: yours, those shared with you, and your MCP servers and tools",
		Args:  cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if k := duet.AssetKind(kind); kind != "" && !k.Valid() && !isMCPKind(k) {
				return usage("unknown asset kind %q: want skill, rule, prompt, mcp-server or mcp-tool", kind)
			}
			return nil
		},
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		k := duet.AssetKind(kind)
		mcpOnly := isMCPKind(k)
		in := api.AssetListIn{Kind: k}
		if mcpOnly {
			in.Kind = "" // the MCP servers come with every kind
		}
		list, err := c.ListAssets(cmd.Context(), in)
		if err != nil {
			return err
		}
		assets, servers := list.Assets, list.MCPServers
		if mcpOnly {
			assets = nil
		}
		return printAssets(env, k, assets, servers, asJSON)
	})
	cmd.Flags().StringVar(&kind, "kind", "", "only this kind: skill, rule, prompt, mcp-server or mcp-tool")
	return cmd
}

// isMCPKind reports whether k is one of the kinds an MCP server gives
// (mcp-server, mcp-tool), not an asset's.
func isMCPKind(k duet.AssetKind) bool {
	return k == duet.AssetMCPServer || k == duet.AssetMCPTool
}

// printAssets prints the assets of asset list: a table, or JSON.
func printAssets(env Env, k duet.AssetKind, assets []*duet.Asset, servers []*duet.MCPServerAsset, asJSON bool) error {
	if asJSON {
		return printJSON(env.Stdout, map[string]any{"assets": nonNilAssets(assets), "mcpServers": nonNilServers(servers)})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tVERSION\tVISIBILITY\tDESCRIPTION")
	for _, as := range assets {
		fmt.Fprintf(tw, "%s\t%s\tv%d\t%s\t%s\n", as.Kind, as.Ref(), as.Version, visibility(as), oneLine(as.Description, 60))
	}
	for _, s := range servers {
		if k != duet.AssetMCPTool {
			fmt.Fprintf(tw, "%s\t%s\t-\t%s\t%s\n", duet.AssetMCPServer, s.Name, "yours", oneLine(s.Description, 60))
		}
		if k != duet.AssetMCPServer {
			for _, t := range s.Tools {
				fmt.Fprintf(tw, "%s\t%s/%s\t-\t%s\t%s\n", duet.AssetMCPTool, s.Name, escape.Text(t.Name), "yours", oneLine(t.Description, 60))
			}
		}
	}
	return tw.Flush()
}

func nonNilAssets(a []*duet.Asset) []*duet.Asset {
	if a == nil {
		return []*duet.Asset{}
	}
	return a
}

func nonNilServers(s []*duet.MCPServerAsset) []*duet.MCPServerAsset {
	if s == nil {
		return []*duet.MCPServerAsset{}
	}
	return s
}

// oneLine shortens s, text another party may have written, to one line of
// at most n runes, escaped (escape.Text) so that a table's columns line up.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return escape.Text(s)
}

// block prints text of several lines that another party may have written
// (a skill's body, a tool's description): its lines as they are, ending
// with a newline. Control characters are escaped on the way out (Main's
// escape.Writer); Windows line ends are plain line ends.
func block(w io.Writer, text string) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	fmt.Fprint(w, text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(w)
	}
}

func assetShowCmd(env Env) *cobra.Command {
	var version int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show KIND NAME",
		Short: "Show an asset (NAME or owner/name; for MCP: mcp-server NAME, mcp-tool SERVER/TOOL)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k := duet.AssetKind(strings.ToLower(args[0]))
			if isMCPKind(k) {
				return showMCPAsset(cmd, env, k, args[1], asJSON)
			}
			kind, err := parseKind(args[0])
			if err != nil {
				return err
			}
			return withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
				as, err := c.GetAsset(cmd.Context(), kind, args[1], version)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(env.Stdout, as)
				}
				fmt.Fprintf(env.Stdout, "%s %s v%d (%s)\n", as.Kind, as.Ref(), as.Version, visibility(as))
				if as.Description != "" {
					fmt.Fprintln(env.Stdout, escape.Text(as.Description))
				}
				fmt.Fprintf(env.Stdout, "updated %s\n\n", as.UpdatedAt.Local().Format(time.RFC3339))
				block(env.Stdout, as.Body)
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().IntVar(&version, "version", 0, "show this version (default: the latest)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	addAs(cmd)
	return cmd
}

func showMCPAsset(cmd *cobra.Command, env Env, kind duet.AssetKind, ref string, asJSON bool) error {
	c, err := connect(cmd, env)
	if err != nil {
		return err
	}
	defer c.Close()
	list, err := c.ListAssets(cmd.Context(), api.AssetListIn{})
	if err != nil {
		return err
	}
	servers := list.MCPServers
	serverName, toolName, _ := strings.Cut(ref, "/")
	for _, s := range servers {
		if s.Name != serverName && s.ServerKey != serverName {
			continue
		}
		if kind == duet.AssetMCPServer {
			if asJSON {
				return printJSON(env.Stdout, s)
			}
			fmt.Fprintf(env.Stdout, "mcp-server %s (%s)\n", s.Name, s.ServerKey)
			block(env.Stdout, s.Description)
			fmt.Fprintln(env.Stdout, "tools:")
			for _, t := range s.Tools {
				fmt.Fprintf(env.Stdout, "  %s  %s\n", escape.Text(t.Name), oneLine(t.Description, 80))
			}
			return nil
		}
		for _, t := range s.Tools {
			if t.Name != toolName {
				continue
			}
			if asJSON {
				return printJSON(env.Stdout, t)
			}
			fmt.Fprintf(env.Stdout, "mcp-tool %s/%s\n", s.Name, escape.Text(t.Name))
			block(env.Stdout, t.Description)
			fmt.Fprintf(env.Stdout, "input schema: %s\n", string(t.InputSchema))
			if len(t.OutputSchema) > 0 {
				fmt.Fprintf(env.Stdout, "output schema: %s\n", string(t.OutputSchema))
			}
			return nil
		}
	}
	return duet.Errorf(duet.CodeNotFound, "%s %s not found among your registered MCP servers", kind, ref)
}

func assetRmCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rm KIND NAME",
		Short: "Remove one of your assets and all its versions",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := parseKind(args[0])
			if err != nil {
				return err
			}
			return withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
				if err := c.DeleteAsset(cmd.Context(), kind, args[1]); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "%s %s/%s removed\n", kind, c.User(), args[1])
				return nil
			})(cmd, args)
		},
	}
	addAs(cmd)
	return cmd
}
