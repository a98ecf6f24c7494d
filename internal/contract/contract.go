// Package contract finds the cases another team's tool change breaks. When a
// sync archives a server's catalog that differs from the one before
// (mcpclient.Options.CatalogChanged), every mcpCall step that calls a changed
// tool is checked again against the new catalog: the tool must exist, the
// call must pass every required argument and no argument the tool no longer
// takes (when it refuses unknown ones), and every fixed value it passes must
// validate against the argument's new schema (a type changed, an enum
// option went). A call that no longer fits flags its case broken by a
// dependency change; one that still fits marks it changed, with the
// difference.
package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
)

// Store is what the checker needs.
type Store interface {
	FindCasesCallingServer(ctx context.Context, serverKey string) ([]*duet.Case, error)
	SaveContractAlerts(ctx context.Context, alerts []*duet.ContractAlert) error
	FindTaskByID(ctx context.Context, viewer, id string) (*duet.Task, error)
}

// Checker records the alerts of catalog changes.
type Checker struct {
	store Store
	log   *slog.Logger
	now   func() time.Time
}

// New returns a Checker; log receives one warning per broken case, to its
// task's owner's attention (nil discards them).
func New(store Store, log *slog.Logger) *Checker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Checker{store: store, log: log, now: time.Now}
}

// CatalogChanged checks the cases that call serverKey's changed tools
// against the new catalog and records an alert for each (case, tool). It
// returns the alerts recorded.
func (k *Checker) CatalogChanged(ctx context.Context, serverKey string, old, new []*duet.MCPTool) ([]*duet.ContractAlert, error) {
	changes := Diff(old, new)
	if len(changes) == 0 {
		return nil, nil
	}
	cases, err := k.store.FindCasesCallingServer(ctx, serverKey)
	if err != nil {
		return nil, err
	}
	byName := map[string]*duet.MCPTool{}
	for _, t := range new {
		byName[t.Name] = t
	}
	now := k.now().UTC()
	var alerts []*duet.ContractAlert
	for _, c := range cases {
		seen := map[string]*duet.ContractAlert{}
		for _, st := range c.Steps {
			m := st.MCP
			if m == nil || m.ServerKey != serverKey || changes[m.ToolName] == nil {
				continue
			}
			a := seen[m.ToolName]
			if a == nil {
				a = &duet.ContractAlert{TaskID: c.TaskID, CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version,
					ServerKey: serverKey, Tool: m.ToolName, Changes: changes[m.ToolName], DetectedAt: now}
				seen[m.ToolName] = a
				alerts = append(alerts, a)
			}
			for _, p := range Check(m, byName[m.ToolName]) {
				a.Problems = append(a.Problems, fmt.Sprintf("step %d (%s): %s", st.Index+1, st.Name, p))
			}
			a.Broken = len(a.Problems) > 0
		}
	}
	if len(alerts) == 0 {
		return nil, nil
	}
	if err := k.store.SaveContractAlerts(ctx, alerts); err != nil {
		return nil, err
	}
	for _, a := range alerts {
		if !a.Broken {
			continue
		}
		owner := ""
		if t, err := k.store.FindTaskByID(ctx, "", a.TaskID); err == nil {
			owner = t.Owner
		}
		k.log.WarnContext(ctx, "a case is broken by a dependency change", "task", a.TaskID, "owner", owner, "case", a.CaseID,
			"server", serverKey, "tool", a.Tool, "problems", strings.Join(a.Problems, "; "))
	}
	return alerts, nil
}

// Check says why call no longer fits tool (nil: it fits). tool nil means
// the server no longer has it.
func Check(call *duet.MCPCallStep, tool *duet.MCPTool) []string {
	if tool == nil {
		return []string{fmt.Sprintf("tool %s was removed from the server", call.ToolName)}
	}
	var in schema
	if len(tool.InputSchema) == 0 || json.Unmarshal(tool.InputSchema, &in) != nil {
		return nil
	}
	var out []string
	for _, req := range in.Required {
		if _, ok := call.InputBindings[req]; !ok {
			out = append(out, fmt.Sprintf("tool %s now requires argument %q, which the case does not pass", call.ToolName, req))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(call.InputBindings)) {
		raw, ok := in.Properties[name]
		if !ok {
			if in.AdditionalProperties != nil && !*in.AdditionalProperties {
				out = append(out, fmt.Sprintf("tool %s no longer takes argument %q", call.ToolName, name))
			}
			continue
		}
		b := call.InputBindings[name]
		if b.Source != duet.BindValue || dynamic(b.Value) {
			continue // known only when the case runs
		}
		if err := validate(raw, b.Value); err != nil {
			out = append(out, fmt.Sprintf("argument %q: the value the case passes (%s) no longer fits: %v", name, short(b.Value), err))
		}
	}
	return out
}

// schema is the part of a JSON Schema the diff reads.
type schema struct {
	Type                 any                        `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
	Enum                 []any                      `json:"enum"`
}

// dynamic reports whether a fixed value holds a template (a string with
// ${...}): its value is known only when the case runs.
func dynamic(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, "${")
	case map[string]any:
		return slices.ContainsFunc(slices.Collect(maps.Values(x)), dynamic)
	case []any:
		return slices.ContainsFunc(x, dynamic)
	}
	return false
}

func validate(raw json.RawMessage, v any) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil // a schema the library cannot read checks nothing
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	return rs.Validate(doc)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// Diff lists, per tool name, how the tools of new differ from those of old:
// tools removed, arguments added, removed, made required, retyped, enum
// options gone or added, output and annotation changes. Tools only in new,
// and tools unchanged, are absent.
func Diff(old, new []*duet.MCPTool) map[string][]string {
	byName := map[string]*duet.MCPTool{}
	for _, t := range new {
		byName[t.Name] = t
	}
	out := map[string][]string{}
	for _, o := range old {
		n := byName[o.Name]
		if n == nil {
			out[o.Name] = []string{"tool removed"}
			continue
		}
		var lines []string
		lines = append(lines, schemaDiff("argument", o.InputSchema, n.InputSchema)...)
		lines = append(lines, schemaDiff("output field", o.OutputSchema, n.OutputSchema)...)
		lines = append(lines, annotationDiff(o.Annotations, n.Annotations)...)
		if o.Description != n.Description {
			lines = append(lines, "description changed")
		}
		if len(lines) > 0 {
			out[o.Name] = lines
		}
	}
	return out
}

// DiffAll is Diff with the tools only new has ("tool added").
func DiffAll(old, new []*duet.MCPTool) map[string][]string {
	out := Diff(old, new)
	had := map[string]bool{}
	for _, t := range old {
		had[t.Name] = true
	}
	for _, t := range new {
		if !had[t.Name] {
			out[t.Name] = []string{"tool added"}
		}
	}
	return out
}

func schemaDiff(what string, a, b json.RawMessage) []string {
	if string(a) == string(b) {
		return nil
	}
	var x, y schema
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return []string{what + "s: the schema changed"}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(x.Properties)) {
		if _, ok := y.Properties[name]; !ok {
			out = append(out, fmt.Sprintf("%s %q removed", what, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(y.Properties)) {
		pb := y.Properties[name]
		pa, ok := x.Properties[name]
		req := slices.Contains(y.Required, name)
		switch {
		case !ok && req:
			out = append(out, fmt.Sprintf("%s %q added, required", what, name))
		case !ok:
			out = append(out, fmt.Sprintf("%s %q added", what, name))
		default:
			if req && !slices.Contains(x.Required, name) {
				out = append(out, fmt.Sprintf("%s %q is now required", what, name))
			}
			out = append(out, propertyDiff(what, name, pa, pb)...)
		}
	}
	for _, name := range x.Required {
		if _, ok := y.Properties[name]; ok && !slices.Contains(y.Required, name) {
			out = append(out, fmt.Sprintf("%s %q is now optional", what, name))
		}
	}
	if (x.AdditionalProperties == nil || *x.AdditionalProperties) && y.AdditionalProperties != nil && !*y.AdditionalProperties {
		out = append(out, what+"s: unknown ones are now refused")
	}
	if len(out) == 0 {
		out = append(out, what+"s: the schema changed")
	}
	return out
}

func propertyDiff(what, name string, a, b json.RawMessage) []string {
	if string(a) == string(b) {
		return nil
	}
	var x, y schema
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return []string{fmt.Sprintf("%s %q changed", what, name)}
	}
	var out []string
	if ta, tb := fmt.Sprint(x.Type), fmt.Sprint(y.Type); ta != tb {
		out = append(out, fmt.Sprintf("%s %q: type %s → %s", what, name, ta, tb))
	}
	var gone, added []string
	for _, v := range x.Enum {
		if !slices.ContainsFunc(y.Enum, func(w any) bool { return fmt.Sprint(w) == fmt.Sprint(v) }) && len(y.Enum) > 0 {
			gone = append(gone, fmt.Sprint(v))
		}
	}
	for _, v := range y.Enum {
		if !slices.ContainsFunc(x.Enum, func(w any) bool { return fmt.Sprint(w) == fmt.Sprint(v) }) {
			added = append(added, fmt.Sprint(v))
		}
	}
	if len(gone) > 0 {
		out = append(out, fmt.Sprintf("%s %q: option(s) %s removed", what, name, strings.Join(gone, ", ")))
	}
	if len(added) > 0 && len(x.Enum) > 0 {
		out = append(out, fmt.Sprintf("%s %q: option(s) %s added", what, name, strings.Join(added, ", ")))
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("%s %q changed", what, name))
	}
	return out
}

func annotationDiff(a, b json.RawMessage) []string {
	if string(a) == string(b) {
		return nil
	}
	var x, y map[string]any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	var out []string
	keys := map[string]bool{}
	for k := range x {
		keys[k] = true
	}
	for k := range y {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, oka := x[k]
		vb, okb := y[k]
		if oka && okb && fmt.Sprint(va) == fmt.Sprint(vb) {
			continue
		}
		show := func(v any, ok bool) string {
			if !ok {
				return "unset"
			}
			return fmt.Sprint(v)
		}
		out = append(out, fmt.Sprintf("annotation %s: %s → %s", k, show(va, oka), show(vb, okb)))
	}
	return out
}
