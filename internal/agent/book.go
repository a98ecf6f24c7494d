package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/duet-test/duet"
)

// PromptArg is an argument of a prompt.
type PromptArg struct {
	Name        string
	Description string
	Required    bool
}

// PromptSpec is a prompt that a client's own model can use to write Duet
// cases: the same brief the agent works from, rendered as one text for a
// user. Duet's MCP server offers them (prompts/list, prompts/get).
type PromptSpec struct {
	Name        string
	Title       string
	Description string
	Args        []PromptArg
	// Render returns the prompt's text for user. Errors: NOT_FOUND (a task
	// or asset user cannot see), INVALID_ARGUMENT (a missing argument).
	Render func(ctx context.Context, user string, args map[string]string) (string, error)
}

// TaskResolver finds a task user may see by id or name. Returns NOT_FOUND.
type TaskResolver func(ctx context.Context, user, ref string) (*duet.Task, error)

// Names of the prompts.
const (
	PromptGenerateCase = "generate_test_case"
	PromptSkill        = "skill"
	PromptRules        = "rules"
	PromptPrompt       = "prompt"
	PromptMCPTools     = "mcp_tools"
)

// Prompts returns the prompts for case generation: generate_test_case
// (everything) and one per asset kind: skill, rules, prompt and mcp_tools.
// They read the same data as the agent, through d and tasks, as the caller.
func Prompts(d Deps, tasks TaskResolver) []*PromptSpec {
	taskArg := PromptArg{Name: "task", Description: "the task's id or name", Required: true}
	goalArg := PromptArg{Name: "goal", Description: "what the case should prove (optional)"}
	need := func(args map[string]string, name string) (string, error) {
		v := strings.TrimSpace(args[name])
		if v == "" {
			return "", duet.Errorf(duet.CodeInvalidArgument, "argument %s is required", name)
		}
		return v, nil
	}
	generate := func(ctx context.Context, user string, args map[string]string, prompt string) (string, error) {
		ref, err := need(args, "task")
		if err != nil {
			return "", err
		}
		task, err := tasks(ctx, user, ref)
		if err != nil {
			return "", err
		}
		var skills []string
		for _, s := range strings.Split(args["skills"], ",") {
			if s = strings.TrimSpace(s); s != "" {
				skills = append(skills, s)
			}
		}
		b, err := gather(ctx, &d, gatherInput{User: user, Task: task, Goal: args["goal"], Skills: skills, Prompt: prompt})
		if err != nil {
			return "", err
		}
		return b.systemPrompt(false) + "\n# What to write\n\n" + b.userPrompt(true), nil
	}
	return []*PromptSpec{
		{
			Name:  PromptGenerateCase,
			Title: "Generate a Duet test case",
			Description: "Write one declarative test case for a Duet task: the case format, the team's rules, the " +
				"chosen skills, the registered MCP tools and the task's existing cases. The answer is one case in YAML, to add to the task's suite file.",
			Args: []PromptArg{taskArg, goalArg,
				{Name: "skills", Description: "comma-separated skill names to apply (optional)"},
				{Name: "prompt", Description: "a prompt asset to start from (optional)"}},
			Render: func(ctx context.Context, user string, args map[string]string) (string, error) {
				return generate(ctx, user, args, strings.TrimSpace(args["prompt"]))
			},
		},
		{
			Name:        PromptSkill,
			Title:       "Use a Duet skill",
			Description: "A skill from Duet's asset center: how to test something, to apply when writing test cases.",
			Args:        []PromptArg{{Name: "name", Description: "the skill's name or owner/name", Required: true}},
			Render: func(ctx context.Context, user string, args map[string]string) (string, error) {
				name, err := need(args, "name")
				if err != nil {
					return "", err
				}
				a, err := findAsset(ctx, d, user, duet.AssetSkill, name)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("Apply this skill when you write Duet test cases.\n\n## Skill %s v%d%s\n\n%s\n",
					a.Ref(), a.Version, dash(a.Description), strings.TrimSpace(a.Body)), nil
			},
		},
		{
			Name:        PromptRules,
			Title:       "Duet team rules",
			Description: "The rules from Duet's asset center that every test case must follow.",
			Render: func(ctx context.Context, user string, _ map[string]string) (string, error) {
				if d.Assets == nil {
					return "There are no team rules.", nil
				}
				rules, err := d.Assets.FindAssets(ctx, duet.AssetFilter{Viewer: user, Kind: duet.AssetRule, Limit: maxRules})
				if err != nil {
					return "", err
				}
				if len(rules) == 0 {
					return "There are no team rules.", nil
				}
				var s strings.Builder
				s.WriteString("Every Duet test case you write must follow these team rules.\n")
				for _, r := range rules {
					fmt.Fprintf(&s, "\n## Rule %s v%d%s\n\n%s\n", r.Ref(), r.Version, dash(r.Description), strings.TrimSpace(r.Body))
				}
				return s.String(), nil
			},
		},
		{
			Name:  PromptPrompt,
			Title: "Start from a Duet prompt",
			Description: "A prompt from Duet's asset center. With a task, it comes with everything needed to write " +
				"the case (as generate_test_case).",
			Args: []PromptArg{{Name: "name", Description: "the prompt's name or owner/name", Required: true},
				{Name: "task", Description: "the task's id or name (optional)"}, goalArg},
			Render: func(ctx context.Context, user string, args map[string]string) (string, error) {
				name, err := need(args, "name")
				if err != nil {
					return "", err
				}
				if strings.TrimSpace(args["task"]) != "" {
					return generate(ctx, user, args, name)
				}
				a, err := findAsset(ctx, d, user, duet.AssetPrompt, name)
				if err != nil {
					return "", err
				}
				return strings.TrimSpace(a.Body) + "\n", nil
			},
		},
		{
			Name:  PromptMCPTools,
			Title: "Your MCP tools for Duet cases",
			Description: "The MCP servers you registered in Duet and their tools (descriptions and schemas), and how " +
				"a case calls them with mcpCall steps.",
			Render: func(ctx context.Context, user string, _ map[string]string) (string, error) {
				var servers []*duet.MCPServerAsset
				if d.Servers != nil {
					var err error
					if servers, err = d.Servers.MCPAssets(ctx, user); err != nil {
						return "", err
					}
				}
				if len(servers) == 0 {
					return "You have registered no MCP servers in Duet.", nil
				}
				b := &brief{Servers: servers}
				b.scanServers()
				var s strings.Builder
				s.WriteString("A Duet case calls these tools on every run with an mcpCall step " +
					"(mcpCall: {server: NAME, tool: TOOL, input: {ARG: BINDING}, saveAs: VAR}), as the person who runs it.\n")
				text := b.systemPrompt(false)
				if i := strings.Index(text, "# Registered MCP servers"); i >= 0 {
					s.WriteString("\n" + text[i:])
				}
				return s.String(), nil
			},
		},
	}
}

func findAsset(ctx context.Context, d Deps, user string, kind duet.AssetKind, ref string) (*duet.Asset, error) {
	if d.Assets == nil {
		return nil, duet.Errorf(duet.CodeNotFound, "%s %s not found", kind, ref)
	}
	return d.Assets.FindAsset(ctx, user, kind, ref, 0)
}

func dash(s string) string {
	if s == "" {
		return ""
	}
	return " — " + s
}
