package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/agent"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

func generateCmd(env Env) *cobra.Command {
	var task, goal, prompt string
	var skills, allowTools, allowFlows []string
	var opts agent.Options
	var asJSON bool
	cmd := clientCmd(env, &cobra.Command{
		Use:   "generate --task TASK [--goal TEXT] [--skill NAME ...] [--prompt NAME]",
		Short: "Have the test agent write a case for a task (saved as a draft, printed as YAML)",
		Long: `generate asks the test agent to write one case for TASK (an id or a name), as --as.
The agent reads the task, its cases and the page under test, may call the read-only
MCP tools you registered (as you; --allow-tool lets it call more), follows your rules and the skills you name, and submits a
declarative case. What one server's tool returned never reaches another server's tools during a
generation unless you allow that pair (--allow-flow FROM:TO). The compiler checks it; errors go back to the model (--max-repairs
times at most). The valid case is saved as a draft of the task and printed as YAML;
run it with: duet run TASK --case CASE_ID.

The model is any OpenAI-compatible chat-completions endpoint with tool calling:
  DUET_LLM_BASE_URL   e.g. https://api.openai.com/v1, or http://127.0.0.1:11434/v1 (Ollama)
  DUET_LLM_MODEL      e.g. gpt-4.1-mini, qwen3:8b
  DUET_LLM_API_KEY    or DUET_LLM_API_KEY_FILE (optional for local servers)
  DUET_LLM_TIMEOUT    per request (default 120s)
See docs/agent.md. "duet generate list" shows past generations and their cost.`,
		Args:    cobra.NoArgs,
		PreRunE: needs(&task, "generate needs --task TASK"),
	}, func(cmd *cobra.Command, _ []string, c client.Client) error {
		ctx := cmd.Context()
		var progress func(string)
		if !asJSON {
			// Progress names servers and tools, and quotes what they wrote.
			progress = func(line string) { fmt.Fprintln(env.Stderr, "  "+escape.Text(line)) }
			fmt.Fprintf(env.Stderr, "generating a case for task %s as %s...\n", task, c.User())
		}
		res, err := c.GenerateCase(ctx, api.GenerateIn{TaskID: task, Goal: goal, Skills: skills, Prompt: prompt, AllowTools: allowTools, AllowFlows: allowFlows,
			MaxTurns: opts.MaxTurns, MaxTokens: opts.MaxTokens, TimeoutMs: opts.Timeout.Milliseconds(), MaxRepairs: opts.MaxRepairs}, progress)
		if duet.ErrorCode(err) == duet.CodeLLMNotConfigured {
			return &exitError{2, fmt.Errorf("%s: %s", duet.CodeLLMNotConfigured, duet.ErrorMessage(err))}
		}
		if err != nil {
			return err
		}
		if res.Generation != nil && !asJSON {
			fmt.Fprintf(env.Stderr, "generation %s: %s\n", res.Generation.ID, agent.Summary(res.Generation))
			for _, r := range res.Refused {
				fmt.Fprintf(env.Stderr, "refused: the model's call of %s: %s\n", escape.Text(r.Tool), escape.Text(r.Reason))
			}
		}
		if res.Error != nil {
			if asJSON {
				printJSON(env.Stdout, map[string]any{"generation": res.Generation, "flagged": res.Flagged, "refused": res.Refused})
			}
			return &duet.Error{Code: res.Error.Code, Message: res.Error.Message}
		}
		cs := res.Case
		if asJSON {
			return printJSON(env.Stdout, map[string]any{"case": cs, "yaml": cs.Source, "generation": res.Generation, "flagged": res.Flagged, "refused": res.Refused})
		}
		fmt.Fprint(env.Stdout, cs.Source)
		fmt.Fprintf(env.Stderr, "draft case %s (key %s, v%d) saved in task %s; run it with: duet run %s %s--case %s\n",
			cs.ID, cs.Key, cs.Version, cs.TaskID, cs.TaskID, asFlag(cmd), cs.ID)
		return nil
	})
	cmd.Flags().StringVar(&task, "task", "", "the task (id or name)")
	cmd.Flags().StringVar(&goal, "goal", "", "what the case should prove")
	cmd.Flags().StringSliceVar(&skills, "skill", nil, "apply this skill (name or owner/name; repeatable)")
	cmd.Flags().StringVar(&prompt, "prompt", "", "start from this prompt asset")
	cmd.Flags().StringSliceVar(&allowTools, "allow-tool", nil, "let the model call this MCP tool although it is not read-only: SERVER/TOOL, SERVER/* or '*' (repeatable)")
	cmd.Flags().StringArrayVar(&allowFlows, "allow-flow", nil, "let what the MCP server FROM returns reach the tools of server TO in this generation: FROM:TO, * for any server (repeatable; default: none)")
	cmd.Flags().IntVar(&opts.MaxTurns, "max-turns", agent.DefaultMaxTurns, "most model answers")
	cmd.Flags().IntVar(&opts.MaxTokens, "max-tokens", agent.DefaultMaxTokens, "most tokens (prompt + completion) in all")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", agent.DefaultTimeout, "wall-clock limit")
	cmd.Flags().IntVar(&opts.MaxRepairs, "max-repairs", agent.DefaultMaxRepairs, "drafts sent back with compile errors before giving up (-1: none)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the case, its YAML and the generation record as JSON")
	cmd.AddCommand(generateListCmd(env))
	return cmd
}

func generateListCmd(env Env) *cobra.Command {
	var task string
	var limit int
	cmd := jsonCmd(env, &cobra.Command{
		Use:   "list [--task TASK]",
		Short: "List your past generations: outcome, turns, tokens, attempts, case",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		list, err := c.ListGenerations(cmd.Context(), api.GenerationsIn{TaskID: task, Limit: limit})
		if err != nil {
			return err
		}
		gens := list.Generations
		return printList(env.Stdout, asJSON, gens, gens, "", "TIME\tTASK\tMODEL\tOUTCOME\tTURNS\tTOOLS\tREPAIRS\tTOKENS\tPROMPT\tCOMPLETION\tREQUESTS\tSECONDS\tCASE", func(g *duet.Generation) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%s", g.CreatedAt.Local().Format("2006-01-02 15:04:05"),
				g.TaskID, orDash(g.Model), g.Outcome, g.Turns, g.ToolCalls, g.Repairs, g.TotalTokens, g.PromptTokens, g.CompletionTokens,
				g.Attempts, float64(g.DurationMs)/1000, orDash(g.CaseID))
		})
	})
	cmd.Flags().StringVar(&task, "task", "", "only this task (id or name)")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many")
	return cmd
}
