package scan

import (
	"slices"

	"github.com/duet-test/duet"
)

// TaskCoverage measures, for each server that the cases' mcpCall steps call
// (in the order the cases first call them) and then for each server of
// also (serverKeys) the cases do not call, how much of it the cases
// exercise. registered are the archived catalogs of owner's servers; a
// server the cases call that owner has not registered gets an entry with
// the tools the cases call as Unknown and no totals.
//
// duet scan --task and the MCP section of a run's report both use it.
func TaskCoverage(owner string, registered []Source, cases []*duet.Case, also []string) []*Coverage {
	byKey := map[string]*Source{}
	for i := range registered {
		byKey[registered[i].ServerKey] = &registered[i]
	}
	keys := calledServers(cases)
	for _, k := range also {
		if _, ok := byKey[k]; ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	out := []*Coverage{}
	for _, k := range keys {
		src, ok := byKey[k]
		if !ok {
			out = append(out, &Coverage{Server: "(not registered by " + owner + ")", ServerKey: k,
				Tools: []*ToolCoverage{}, Unknown: calledTools(cases, k)})
			continue
		}
		c := Measure(src.Name, src.ServerKey, src.Tools, cases)
		c.CatalogHash, c.SyncedAt = src.CatalogHash, src.SyncedAt
		out = append(out, c)
	}
	return out
}

// ServerSource is a registered server's archived catalog as a Source.
func ServerSource(s *duet.MCPServer, tools []*duet.MCPTool) Source {
	src := Source{Name: s.Name, ServerKey: s.ServerKey, CatalogHash: s.CatalogHash, SyncedAt: s.SyncedAt}
	for _, t := range tools {
		src.Tools = append(src.Tools, Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
	}
	return src
}

// TaskReport is what a run's report says about the MCP tools its cases
// call: the scan findings of those tools, and the coverage of each called
// server's archived tools by the cases.
type TaskReport struct {
	// Findings has one entry per registered server the cases call, with
	// the findings of the tools they call (Tools counts those tools).
	Findings []*SourceReport `json:"findings"`
	Errors   int             `json:"errors"`
	Warnings int             `json:"warnings"`
	Coverage []*Coverage     `json:"coverage"`
}

// ForTask scans the archived tools that the cases' mcpCall steps call and
// measures the coverage of the servers they call (TaskCoverage). registered
// are all of owner's servers: every one takes part in the scan, so that a
// description naming another server's tool is found. It returns nil when
// the cases call no MCP tool.
func ForTask(owner string, registered []Source, cases []*duet.Case) *TaskReport {
	if !CallsMCP(cases) {
		return nil
	}
	tr := &TaskReport{Findings: []*SourceReport{}, Coverage: TaskCoverage(owner, registered, cases, nil)}
	full := Scan(registered)
	for _, c := range tr.Coverage {
		if !c.Registered {
			continue
		}
		var called []string
		for _, t := range c.Tools {
			if t.Calls > 0 {
				called = append(called, t.Tool)
			}
		}
		for _, s := range full.Sources {
			if s.ServerKey != c.ServerKey {
				continue
			}
			sr := &SourceReport{Name: s.Name, ServerKey: s.ServerKey, Tools: len(called), Findings: []Finding{}}
			for _, f := range s.Findings {
				if !slices.Contains(called, f.Tool) {
					continue
				}
				sr.add(f)
			}
			tr.Errors += sr.Errors
			tr.Warnings += sr.Warnings
			tr.Findings = append(tr.Findings, sr)
		}
	}
	return tr
}

// Source returns the findings of serverKey's called tools, or nil.
func (tr *TaskReport) Source(serverKey string) *SourceReport {
	for _, s := range tr.Findings {
		if s.ServerKey == serverKey {
			return s
		}
	}
	return nil
}

// CallsMCP reports whether any of the cases' steps is an mcpCall.
func CallsMCP(cases []*duet.Case) bool { return len(calledServers(cases)) > 0 }

// calledServers lists the serverKeys the cases' mcpCall steps call, in the
// order they first appear.
func calledServers(cases []*duet.Case) []string {
	keys := []string{}
	for _, c := range cases {
		for _, st := range c.Steps {
			if st.Kind == duet.StepMCPCall && st.MCP != nil && !slices.Contains(keys, st.MCP.ServerKey) {
				keys = append(keys, st.MCP.ServerKey)
			}
		}
	}
	return keys
}

// calledTools lists, sorted, the tools of serverKey the cases call.
func calledTools(cases []*duet.Case, serverKey string) []string {
	out := []string{}
	for _, c := range cases {
		for _, st := range c.Steps {
			if st.Kind == duet.StepMCPCall && st.MCP != nil && st.MCP.ServerKey == serverKey && !slices.Contains(out, st.MCP.ToolName) {
				out = append(out, st.MCP.ToolName)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Text is the option as the scan names it: a string as it is, another
// value as JSON.
func (o *OptionCoverage) Text() string { return optionText(o.Value) }
