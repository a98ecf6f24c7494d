package scan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// Coverage is how much of one server's archived tools a task's cases
// exercise: the tools their mcpCall steps call, the parameters they bind
// and the enum options their fixed values choose. A value that comes from a
// variable, the page or a template is known only when the case runs: its
// parameter counts as covered and its enum options as unknown.
type Coverage struct {
	Server    string `json:"server"`
	ServerKey string `json:"serverKey"`
	// Registered is false for a server the cases call that the person has
	// not registered (TaskCoverage): its tools are unknown. CatalogHash and
	// SyncedAt name the archived catalog measured, when known.
	Registered  bool            `json:"registered"`
	CatalogHash string          `json:"catalogHash,omitempty"`
	SyncedAt    *time.Time      `json:"syncedAt,omitempty"`
	Tools       []*ToolCoverage `json:"tools"`
	// Unknown lists tools the cases call that the archived catalog does not
	// have (renamed or removed since the cases were written).
	Unknown []string `json:"unknownTools"`

	ToolsCovered   int `json:"toolsCovered"`
	ToolsTotal     int `json:"toolsTotal"`
	ParamsCovered  int `json:"paramsCovered"`
	ParamsTotal    int `json:"paramsTotal"`
	OptionsCovered int `json:"optionsCovered"`
	OptionsTotal   int `json:"optionsTotal"`
}

// ToolCoverage is the coverage of one tool.
type ToolCoverage struct {
	Tool     string           `json:"tool"`
	ReadOnly bool             `json:"readOnly"`
	Calls    int              `json:"calls"` // mcpCall steps calling it
	Cases    []string         `json:"cases"` // keys of the cases calling it
	Params   []*ParamCoverage `json:"params"`
}

// ParamCoverage is the coverage of one parameter (nested ones have dotted
// names: "filter.status").
type ParamCoverage struct {
	Name     string            `json:"name"`
	Required bool              `json:"required"`
	Covered  bool              `json:"covered"`
	Dynamic  bool              `json:"dynamic,omitempty"` // some step binds it to a value known only at run time
	Options  []*OptionCoverage `json:"options,omitempty"`
}

// OptionCoverage is one enum option of a parameter.
type OptionCoverage struct {
	Value   any  `json:"value"`
	Covered bool `json:"covered"`
}

// Measure computes the coverage of server's tools by the mcpCall steps of
// cases (those addressed to serverKey).
func Measure(server, serverKey string, tools []Tool, cases []*duet.Case) *Coverage {
	cov := &Coverage{Server: server, ServerKey: serverKey, Registered: true, Tools: []*ToolCoverage{}, Unknown: []string{}}
	byName := map[string]*ToolCoverage{}
	for _, t := range tools {
		tc := &ToolCoverage{Tool: t.Name, ReadOnly: t.ReadOnly(), Cases: []string{}, Params: []*ParamCoverage{}}
		collectParams(parseSchema(t.InputSchema), "", &tc.Params, 0)
		cov.Tools = append(cov.Tools, tc)
		byName[t.Name] = tc
	}
	for _, c := range cases {
		for _, st := range c.Steps {
			if st.Kind != duet.StepMCPCall || st.MCP == nil || st.MCP.ServerKey != serverKey {
				continue
			}
			tc, ok := byName[st.MCP.ToolName]
			if !ok {
				if !slices.Contains(cov.Unknown, st.MCP.ToolName) {
					cov.Unknown = append(cov.Unknown, st.MCP.ToolName)
				}
				continue
			}
			tc.Calls++
			if !slices.Contains(tc.Cases, c.Key) {
				tc.Cases = append(tc.Cases, c.Key)
			}
			for name, b := range st.MCP.InputBindings {
				if b.Source == duet.BindValue {
					markValue(tc.Params, name, b.Value)
				} else {
					markDynamic(tc.Params, name)
				}
			}
		}
	}
	slices.Sort(cov.Unknown)
	for _, tc := range cov.Tools {
		cov.ToolsTotal++
		if tc.Calls > 0 {
			cov.ToolsCovered++
		}
		for _, p := range tc.Params {
			cov.ParamsTotal++
			if p.Covered {
				cov.ParamsCovered++
			}
			for _, o := range p.Options {
				cov.OptionsTotal++
				if o.Covered {
					cov.OptionsCovered++
				}
			}
		}
	}
	return cov
}

// collectParams lists the properties of an object schema, with the
// properties of nested objects as dotted names.
func collectParams(node any, prefix string, out *[]*ParamCoverage, depth int) {
	m, ok := node.(map[string]any)
	if !ok || depth > 4 {
		return
	}
	props, _ := m["properties"].(map[string]any)
	var required []string
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required = append(required, s)
			}
		}
	}
	for _, name := range sortedKeys(props) {
		p, _ := props[name].(map[string]any)
		pc := &ParamCoverage{Name: prefix + name, Required: slices.Contains(required, name)}
		for _, v := range enumOf(p) {
			pc.Options = append(pc.Options, &OptionCoverage{Value: v})
		}
		*out = append(*out, pc)
		collectParams(p, prefix+name+".", out, depth+1)
	}
}

// enumOf returns the options of an enum schema (enum, a oneOf/anyOf of
// consts, or the same on an array's items).
func enumOf(p map[string]any) []any {
	if p == nil {
		return nil
	}
	if e, ok := p["enum"].([]any); ok {
		return e
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		arr, ok := p[k].([]any)
		if !ok {
			continue
		}
		var out []any
		for _, b := range arr {
			if bm, ok := b.(map[string]any); ok {
				if c, has := bm["const"]; has {
					out = append(out, c)
				}
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if items, ok := p["items"].(map[string]any); ok {
		return enumOf(items)
	}
	return nil
}

func findParam(params []*ParamCoverage, name string) *ParamCoverage {
	for _, p := range params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// markValue marks parameter name (and, for an object value, its nested
// parameters) covered by a fixed value.
func markValue(params []*ParamCoverage, name string, v any) {
	p := findParam(params, name)
	if p == nil {
		return // not in the schema: the compiler reports it
	}
	p.Covered = true
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "${") {
			p.Dynamic = true
			return
		}
		markOption(p, x)
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && strings.Contains(s, "${") {
				p.Dynamic = true
				continue
			}
			markOption(p, e)
		}
	case map[string]any:
		for k, e := range x {
			markValue(params, name+"."+k, e)
		}
	default:
		markOption(p, x)
	}
}

// markDynamic marks parameter name and its nested parameters covered by a
// value known only at run time.
func markDynamic(params []*ParamCoverage, name string) {
	for _, p := range params {
		if p.Name == name || strings.HasPrefix(p.Name, name+".") {
			p.Covered, p.Dynamic = true, true
		}
	}
}

func markOption(p *ParamCoverage, v any) {
	key := canonical(v)
	for _, o := range p.Options {
		if canonical(o.Value) == key {
			o.Covered = true
		}
	}
}

func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
