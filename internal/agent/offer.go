package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/duet-test/duet"
)

// Bounds of the tools one request declares.
const (
	// DefaultMaxTools is the default and the most of Options.MaxTools:
	// hosted chat APIs refuse a request that declares more than 128 tools.
	DefaultMaxTools = 128
	// DefaultMaxToolBytes is the default of Options.MaxToolBytes: the tool
	// definitions of one request, as JSON (about 8,000 tokens; every
	// request carries them again).
	DefaultMaxToolBytes = 32 << 10
)

// ToolFindTools is the name of the search tool offered when the user's
// MCP tools do not all fit in a request.
const ToolFindTools = "find_tools"

// Limits of find_tools.
const (
	findDefaultLimit = 10
	findMaxLimit     = 25
)

// mcpEntry is one tool of the user's MCP servers as the agent knows it.
type mcpEntry struct {
	srv      *duet.MCPServerAsset
	tool     *duet.MCPToolAsset
	name     string // what the model calls it by
	callable bool   // the model may call it now (else: an mcpCall target)
}

// Relevance of an MCP tool to the generation, highest first.
const (
	relevanceNone       = 0
	relevanceGoalServer = 1 // a tool of a server the goal names
	relevanceTask       = 2 // a tool of a server the task's cases or post-run actions call
	relevanceGoalTool   = 3 // a tool the goal names
)

// relevance says how relevant tool of srv is to the brief's task and goal.
func (b *brief) relevance(srv *duet.MCPServerAsset, tool *duet.MCPToolAsset) int {
	switch {
	case b.Goal != "" && (mentions(b.Goal, tool.Name) || mentions(b.Goal, toolName(srv.Name, tool.Name))):
		return relevanceGoalTool
	case b.taskServers()[srv.ServerKey]:
		return relevanceTask
	case b.Goal != "" && mentions(b.Goal, srv.Name):
		return relevanceGoalServer
	}
	return relevanceNone
}

// taskServers returns the serverKeys the task's cases (drafts included)
// and post-run actions call.
func (b *brief) taskServers() map[string]bool {
	if b.taskKeys != nil {
		return b.taskKeys
	}
	b.taskKeys = map[string]bool{}
	for _, c := range b.Cases {
		if c.Status == duet.CaseArchived {
			continue
		}
		for _, st := range c.Steps {
			if st.MCP != nil {
				b.taskKeys[st.MCP.ServerKey] = true
			}
		}
	}
	for _, a := range b.Task.PostRun {
		b.taskKeys[a.ServerKey] = true
	}
	return b.taskKeys
}

// mentions reports whether text names word (case-insensitive) as a word
// of its own: not inside a longer name.
func mentions(text, word string) bool {
	if word == "" {
		return false
	}
	lt, lw := strings.ToLower(text), strings.ToLower(word)
	nameRune := func(r rune) bool { return r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	for i := 0; i < len(lt); {
		j := strings.Index(lt[i:], lw)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(lw)
		before, _ := utf8.DecodeLastRuneInString(lt[:start])
		after, _ := utf8.DecodeRuneInString(lt[end:])
		if (start == 0 || !nameRune(before)) && (end == len(lt) || !nameRune(after)) {
			return true
		}
		i = start + 1
	}
	return false
}

// toolOffer chooses the tools each request declares, within a number
// (at most 128) and a size of definitions: Duet's own tools always; the
// user's MCP tools all when they fit, else the relevant ones (the tools
// the goal names, then the tools of the servers the task calls and of the
// servers the goal names) and find_tools, which searches the others.
// What find_tools finds is declared in the next requests, the least
// recently found dropped first when they no longer fit; a tool not
// declared can still be called by its name.
type toolOffer struct {
	reg      *ToolRegistry
	core     []string // always declared, before the MCP tools
	tail     []string // always declared, after them
	mcp      []string // MCP tools to declare, first the most relevant or most recently found
	size     map[string]int
	maxTools int
	maxBytes int
}

// newToolOffer builds the offer over reg: core and tail are Duet's own
// tools, ranked the callable MCP tools by relevance (relevance 0: declared
// only when all of them fit). It adds find to the tail, and to reg, when
// the MCP tools do not all fit or force says so (the instructions do not
// list them all).
func newToolOffer(reg *ToolRegistry, core, tail []string, ranked []*Tool, relevance map[string]int, maxTools, maxBytes int, find *Tool, force bool) (*toolOffer, error) {
	o := &toolOffer{reg: reg, core: core, tail: tail, size: map[string]int{}, maxTools: maxTools, maxBytes: maxBytes}
	total, bytes := len(core)+len(tail), 0
	for _, n := range slices.Concat(core, tail) {
		t, _ := reg.Tool(n)
		o.size[n] = t.definitionSize()
		bytes += o.size[n]
	}
	for _, t := range ranked {
		o.size[t.Name] = t.definitionSize()
		total++
		bytes += o.size[t.Name]
	}
	if !force && total <= maxTools && bytes <= maxBytes {
		for _, t := range ranked {
			o.mcp = append(o.mcp, t.Name)
		}
		return o, nil
	}
	if err := reg.Add(find); err != nil {
		return nil, err
	}
	o.tail = append(slices.Clone(tail), find.Name)
	o.size[find.Name] = find.definitionSize()
	for _, t := range ranked {
		if relevance[t.Name] > relevanceNone {
			o.mcp = append(o.mcp, t.Name)
		}
	}
	return o, nil
}

// names returns the tools the next request declares: the core, MCP tools
// in order while they fit, the tail.
func (o *toolOffer) names() []string {
	out := slices.Clone(o.core)
	bytes := 0
	for _, n := range slices.Concat(o.core, o.tail) {
		bytes += o.size[n]
	}
	for _, n := range o.mcp {
		if len(out)+len(o.tail) >= o.maxTools {
			break
		}
		if bytes+o.size[n] > o.maxBytes {
			continue // a smaller one may fit
		}
		out = append(out, n)
		bytes += o.size[n]
	}
	return append(out, o.tail...)
}

// found puts the callable tools find_tools returned first, to be declared
// in the next requests.
func (o *toolOffer) found(names []string) {
	if len(names) == 0 {
		return
	}
	rest := slices.DeleteFunc(slices.Clone(o.mcp), func(n string) bool { return slices.Contains(names, n) })
	var front []string
	for _, n := range names {
		if _, ok := o.size[n]; !ok {
			t, ok := o.reg.Tool(n)
			if !ok {
				continue
			}
			o.size[n] = t.definitionSize()
		}
		front = append(front, n)
	}
	o.mcp = append(front, rest...)
}

// findTool is find_tools: it searches every tool of the user's MCP servers
// by words of its name, its server's name and its description (a
// description the scan withheld is not searched, nor shown), and returns
// the best matches with what the model needs to call them or to use them
// in an mcpCall step. The callable ones it finds are declared in the next
// requests (found).
func findTool(entries []*mcpEntry, withheld map[string]bool, found func(names []string)) *Tool {
	servers := map[string]bool{}
	for _, e := range entries {
		servers[e.srv.Name] = true
	}
	return &Tool{
		Name: ToolFindTools,
		Description: fmt.Sprintf("Searches the %d tools of the registered MCP servers (%d servers) by words of their names and descriptions, "+
			"for the ones not offered here. Returns the best matches with their names, descriptions and input schemas; "+
			"those callable now can then be called by the name it gives.", len(entries), len(servers)),
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"words of the tool's name or description, e.g. refund order"},` +
			`"server":{"type":"string","description":"only the tools of this server (its name); optional"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":25,"description":"most matches to return (default 10)"}},"required":["query"]}`),
		Call: func(_ context.Context, raw json.RawMessage) (string, error) {
			var in struct {
				Query  string `json:"query"`
				Server string `json:"server"`
				Limit  int    `json:"limit"`
			}
			if err := json.Unmarshal(raw, &in); err != nil || strings.TrimSpace(in.Query) == "" {
				return "", duet.Errorf(duet.CodeInvalidArgument, `find_tools needs a query, e.g. {"query":"refund order"}`)
			}
			if in.Server != "" && !servers[in.Server] {
				return "", duet.Errorf(duet.CodeNotFound, "no registered MCP server is named %q", in.Server)
			}
			limit := cmp.Or(in.Limit, findDefaultLimit)
			limit = min(max(limit, 1), findMaxLimit)
			words := searchWords(in.Query)
			type hit struct {
				e     *mcpEntry
				score int
			}
			var hits []hit
			for _, e := range entries {
				if in.Server != "" && e.srv.Name != in.Server {
					continue
				}
				desc := e.tool.Description + " " + e.tool.Title
				if withheld[e.srv.Name+"/"+e.tool.Name] {
					desc = ""
				}
				if s := matchScore(words, strings.TrimSpace(in.Query), e, desc); s > 0 {
					hits = append(hits, hit{e, s})
				}
			}
			slices.SortStableFunc(hits, func(a, b hit) int { return b.score - a.score })
			if len(hits) == 0 {
				return fmt.Sprintf("No tool matches %q. Try other words, or fewer.", in.Query), nil
			}
			var s strings.Builder
			fmt.Fprintf(&s, "%d tool(s) match %q", len(hits), in.Query)
			if len(hits) > limit {
				fmt.Fprintf(&s, "; the best %d", limit)
				hits = hits[:limit]
			}
			s.WriteString(":\n")
			var callable []string
			for _, h := range hits {
				e := h.e
				isWithheld := withheld[e.srv.Name+"/"+e.tool.Name]
				desc := oneLine(e.tool.Description)
				schema := compactJSON(e.tool.InputSchema)
				if isWithheld {
					desc, schema = withheldText, compactJSON(stripDescriptions(e.tool.InputSchema))
				}
				if e.callable {
					callable = append(callable, e.name)
					fmt.Fprintf(&s, "- %s (callable now; server %s, tool %s): %s\n", e.name, e.srv.Name, e.tool.Name, desc)
				} else {
					fmt.Fprintf(&s, "- %s/%s (changes data: NOT callable now; use it only as an mcpCall step: server: %s, tool: %s): %s\n",
						e.srv.Name, e.tool.Name, e.srv.Name, e.tool.Name, desc)
				}
				fmt.Fprintf(&s, "  input schema: %s\n", schema)
			}
			found(callable)
			return s.String(), nil
		},
	}
}

// searchWords splits a query into lower-case words (letters and digits).
func searchWords(q string) []string {
	return strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// matchScore rates how well e matches a query: the query as a whole
// naming the tool wins; then each word found among the words of the
// tool's name counts 4, in the server's name 2, in the description 1. A
// tool that misses a word of the query scores 0 unless it has other
// words: at least half the words must be found.
func matchScore(words []string, query string, e *mcpEntry, desc string) int {
	q := strings.ToLower(query)
	if q == strings.ToLower(e.tool.Name) || q == strings.ToLower(e.name) || q == strings.ToLower(e.srv.Name+"/"+e.tool.Name) {
		return 1000
	}
	nameWords := searchWords(e.tool.Name)
	serverWords := searchWords(e.srv.Name)
	descWords := searchWords(desc)
	score, matched := 0, 0
	for _, w := range words {
		hit := false
		if slices.Contains(nameWords, w) {
			score, hit = score+4, true
		}
		if slices.Contains(serverWords, w) {
			score, hit = score+2, true
		}
		if slices.Contains(descWords, w) {
			score, hit = score+1, true
		}
		if hit {
			matched++
		}
	}
	if matched == 0 || 2*matched < len(words) {
		return 0
	}
	return score + 10*matched
}
