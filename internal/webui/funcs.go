package webui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
)

var funcs = template.FuncMap{
	// namePattern is the pattern attribute of a team's or an asset's name:
	// the server's own syntax (duet.NamePattern).
	"namePattern": func() string { return duet.NamePattern },
	"when": func(v any) string {
		switch t := v.(type) {
		case time.Time:
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
		case *time.Time:
			if t == nil {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
		case string:
			if t == "" {
				return "—"
			}
			if p, err := time.Parse(time.RFC3339Nano, t); err == nil {
				return p.UTC().Format("2006-01-02 15:04:05") + " UTC"
			}
			return t
		}
		return fmt.Sprint(v)
	},
	"rfc3339":   func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"joinLines": joinLines,
	"dur":       func(ms int64) string { return duet.FormatMs(ms, 1) },
	"us":        func(us int64) string { return fmt.Sprintf("%.1f ms", float64(us)/1000) },
	"pct":       func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	// ratio is a share of pixels with two decimals ("—" for none).
	"ratio": func(f *float64) string {
		if f == nil {
			return "—"
		}
		return fmt.Sprintf("%.2f%%", *f*100)
	},
	"join": func(s []string) string { return strings.Join(s, ", ") },
	"json": func(raw json.RawMessage) string {
		if len(raw) == 0 {
			return ""
		}
		return prettyJSON(raw)
	},
	"path": escapePath,
	"done": func(n, total int) int {
		if total == 0 {
			return 0
		}
		return n
	},
	"finished": func(t duet.RunTotals) int { return t.Passed + t.Flaky + t.Failed + t.Error + t.Cancelled },
	"final":    func(s duet.RunStatus) bool { return s.Final() },
	"eq2":      func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) },
}

// escapePath escapes one segment of a console URL path.
func escapePath(s string) string { return url.PathEscape(s) }

// ---- the manual tool call form, generated from the input schema ----

// field is one input of a tool's argument form.
type field struct {
	Name     string // the property
	Label    string
	Desc     string
	Kind     string // text, number, integer, checkbox, select, json
	Required bool
	Options  []string
	Value    string
	Checked  bool
}

// form is a tool's argument form. Raw is true when the schema has no
// properties to make fields of: the arguments are then one JSON object.
type form struct {
	Fields   []field
	Raw      bool
	RawValue string
}

type propSchema struct {
	Type        any    `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Default     any    `json:"default"`
}

func typeName(t any) string {
	switch v := t.(type) {
	case string:
		return v
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

// buildForm makes the form of a tool from its input schema: a text field
// per string, a number field per number or integer, a checkbox per
// boolean, a list per enum, and a JSON text area for objects and arrays.
// posted refills it after a call.
func buildForm(schema json.RawMessage, posted url.Values) form {
	var s struct {
		Properties map[string]propSchema `json:"properties"`
		Required   []string              `json:"required"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return form{Raw: true, RawValue: posted.Get("arguments")}
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	// Required first, then by name.
	slices.SortFunc(names, func(a, b string) int {
		ra, rb := slices.Contains(s.Required, a), slices.Contains(s.Required, b)
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var f form
	for _, n := range names {
		p := s.Properties[n]
		fd := field{Name: n, Label: n, Desc: p.Description, Required: slices.Contains(s.Required, n)}
		if p.Title != "" {
			fd.Label = p.Title
		}
		switch t := typeName(p.Type); {
		case len(p.Enum) > 0:
			fd.Kind = "select"
			for _, e := range p.Enum {
				fd.Options = append(fd.Options, fmt.Sprint(e))
			}
		case t == "string":
			fd.Kind = "text"
		case t == "integer":
			fd.Kind = "integer"
		case t == "number":
			fd.Kind = "number"
		case t == "boolean":
			fd.Kind = "checkbox"
		default:
			fd.Kind = "json"
		}
		if posted != nil {
			fd.Value = posted.Get("arg." + n)
			fd.Checked = posted.Get("arg."+n) == "true"
		} else if p.Default != nil {
			if b, err := json.Marshal(p.Default); err == nil {
				fd.Value = strings.Trim(string(b), `"`)
			}
			fd.Checked = p.Default == true
		}
		f.Fields = append(f.Fields, fd)
	}
	return f
}

// arguments reads the posted form into the tool's arguments. Returns
// INVALID_ARGUMENT naming the field.
func (f form) arguments(posted url.Values) (map[string]any, error) {
	if f.Raw {
		raw := strings.TrimSpace(posted.Get("arguments"))
		if raw == "" {
			return map[string]any{}, nil
		}
		var m map[string]any
		if err := api.DecodeJSON([]byte(raw), &m, "the arguments"); err != nil || m == nil {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "the arguments must be a JSON object (RFC 7493: UTF-8, no duplicate keys)")
		}
		return m, nil
	}
	args := map[string]any{}
	for _, fd := range f.Fields {
		v := strings.TrimSpace(posted.Get("arg." + fd.Name))
		if fd.Kind == "checkbox" {
			if v == "true" {
				args[fd.Name] = true
			} else if fd.Required {
				args[fd.Name] = false
			}
			continue
		}
		if v == "" {
			if fd.Required {
				return nil, duet.Errorf(duet.CodeInvalidArgument, "%s is required", fd.Name)
			}
			continue
		}
		switch fd.Kind {
		case "integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, duet.Errorf(duet.CodeInvalidArgument, "%s: want a whole number", fd.Name)
			}
			args[fd.Name] = n
		case "number":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
				return nil, duet.Errorf(duet.CodeInvalidArgument, "%s: want a number", fd.Name)
			}
			args[fd.Name] = n
		case "json":
			var x any
			if err := api.DecodeJSON([]byte(v), &x, fd.Name); err != nil {
				return nil, duet.Errorf(duet.CodeInvalidArgument, "%s: want JSON (RFC 7493: UTF-8, no duplicate keys)", fd.Name)
			}
			args[fd.Name] = x
		default:
			args[fd.Name] = v
		}
	}
	return args, nil
}
