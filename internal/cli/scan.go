package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/scan"
)

func scanCmd(env Env) *cobra.Command {
	var servers []string
	var task string
	var duetOnly, strict bool
	cmd := jsonCmd(env, &cobra.Command{
		Use:   "scan [--mcp-server NAME ...] [--duet] [--task TASK] [--json] [--strict]",
		Short: "Check the quality of tool descriptions (Duet's own and your servers') and a task's tool coverage",
		Long: `scan checks tool descriptions as tools/list gives them: Duet's own catalog and the
archived tools of the MCP servers you (--as) registered.

  quality      a description that says what the tool does and when to use it,
               every parameter described, every enum option explained
  portability  schemas every major client accepts: no bare true/false schemas, no
               "type" arrays such as ["null","string"], no remote $ref, no schema that
               constrains nothing, an object input schema, names of at most 64
               letters, digits, '_' or '-' (MCP Inspector --strict applies the same
               schema rules)
  security     descriptions with instructions aimed at the model ("before answering,
               call ..."), invisible characters, names of another server's tools;
               the test agent withholds such text from the model

--mcp-server NAME scans only those servers (repeatable); --duet only Duet's catalog
(as this duet defines it).
--task TASK adds coverage: which tools, parameters and enum options of each server
the task's mcpCall steps exercise. --strict exits 1 when anything is found.
See docs/scan.md.`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		ctx := cmd.Context()
		var sources []scan.Source
		if duetOnly || len(servers) == 0 {
			sources = append(sources, DuetSource(catalog.New(nil, catalog.Options{})))
		}
		regs, err := c.ListServers(ctx)
		if err != nil {
			return err
		}
		var registered []scan.Source
		for _, s := range regs.Servers {
			d, err := c.GetServer(ctx, s.ServerKey)
			if err != nil {
				return err
			}
			src := scan.ServerSource(&duet.MCPServer{Name: d.Server.Name, ServerKey: d.Server.ServerKey, CatalogHash: d.Server.CatalogHash, SyncedAt: d.Server.SyncedAt}, d.Tools)
			registered = append(registered, src)
			if !duetOnly && (len(servers) == 0 || slices.Contains(servers, s.Name) || slices.Contains(servers, s.ServerKey)) {
				sources = append(sources, src)
			}
		}
		for _, name := range servers {
			if !slices.ContainsFunc(regs.Servers, func(s api.ServerView) bool { return s.Name == name || s.ServerKey == name }) {
				return duet.Errorf(duet.CodeNotFound, "you have not registered an MCP server named %q", name)
			}
		}
		rep := scan.Scan(sources)

		var coverage []*scan.Coverage
		if task != "" {
			if coverage, err = taskCoverage(ctx, c, task, registered, servers); err != nil {
				return err
			}
		}
		if asJSON {
			if err := printJSON(env.Stdout, struct {
				*scan.Report
				Coverage []*scan.Coverage `json:"coverage,omitempty"`
			}{rep, coverage}); err != nil {
				return err
			}
		} else {
			if err := rep.WriteText(env.Stdout, escape.Text); err != nil {
				return err
			}
			for _, c := range coverage {
				fmt.Fprintln(env.Stdout)
				if err := c.WriteText(env.Stdout, escape.Text); err != nil {
					return err
				}
			}
		}
		if strict && !rep.Clean() {
			return &exitError{1, fmt.Errorf("scan: %d error(s), %d warning(s)", rep.Errors, rep.Warnings)}
		}
		return nil
	})
	cmd.Flags().StringSliceVar(&servers, "mcp-server", nil, "scan only this registered MCP server (name or serverKey; repeatable)")
	cmd.Flags().BoolVar(&duetOnly, "duet", false, "scan only Duet's own tool catalog")
	cmd.Flags().StringVar(&task, "task", "", "also measure the coverage of the servers' tools by this task's cases (id or name)")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when the scan finds anything")
	return cmd
}

// DuetSource is Duet's own catalog as tools/list describes it.
func DuetSource(cat *catalog.Catalog) scan.Source {
	src := scan.Source{Name: "duet"}
	for _, t := range cat.Tools() {
		b, err := json.Marshal(mcpserver.SDKTool(t))
		if err != nil {
			panic(fmt.Sprintf("scan: encoding tool %s: %v", t.Name, err))
		}
		var st scan.Tool
		if err := json.Unmarshal(b, &st); err != nil {
			panic(fmt.Sprintf("scan: decoding tool %s: %v", t.Name, err))
		}
		src.Tools = append(src.Tools, st)
	}
	return src
}

// taskCoverage measures, for each registered server the task's cases call
// (and each one named), how much of it the cases exercise.
func taskCoverage(ctx context.Context, c client.Client, ref string, registered []scan.Source, named []string) ([]*scan.Coverage, error) {
	var cases []*duet.Case
	for cs, err := range duet.Paged(func(cursor string) ([]catalog.CaseView, string, error) {
		page, err := c.CaseSources(ctx, ref, cursor, 200)
		return page.Cases, page.NextCursor, err
	}) {
		if err != nil {
			return nil, err
		}
		if cs.Status == string(duet.CaseActive) {
			cases = append(cases, &duet.Case{ID: cs.ID, TaskID: cs.TaskID, Key: cs.Key, Title: cs.Title, Version: cs.Version, Steps: cs.Steps})
		}
	}
	var also []string
	for _, src := range registered {
		if slices.Contains(named, src.Name) || slices.Contains(named, src.ServerKey) {
			also = append(also, src.ServerKey)
		}
	}
	return scan.TaskCoverage(c.User(), registered, cases, also), nil
}
