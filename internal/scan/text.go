package scan

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report for a person: per source, its findings one
// by one, then a total. esc makes text from another party safe to print
// (a tool name, an excerpt); nil prints it as it is.
func (r *Report) WriteText(w io.Writer, esc func(string) string) error {
	if esc == nil {
		esc = func(s string) string { return s }
	}
	var b strings.Builder
	for _, s := range r.Sources {
		fmt.Fprintf(&b, "%s", esc(s.Name))
		if s.ServerKey != "" {
			fmt.Fprintf(&b, " (%s)", s.ServerKey)
		}
		fmt.Fprintf(&b, ": %d tools, %s, %s\n", s.Tools, plural(s.Errors, "error"), plural(s.Warnings, "warning"))
		for _, f := range s.Findings {
			fmt.Fprintf(&b, "  %-7s %s  %s  [%s]\n", f.Severity, esc(f.Tool), esc(f.Path), f.Rule)
			fmt.Fprintf(&b, "          %s\n", esc(f.Message))
			if f.Excerpt != "" {
				fmt.Fprintf(&b, "          text: %q\n", f.Excerpt)
			}
		}
	}
	fmt.Fprintf(&b, "%s, %s across %s.\n", plural(r.Errors, "error"), plural(r.Warnings, "warning"), plural(len(r.Sources), "source"))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes the coverage for a person: per tool, its calls, then
// each parameter with its options.
func (c *Coverage) WriteText(w io.Writer, esc func(string) string) error {
	if esc == nil {
		esc = func(s string) string { return s }
	}
	var b strings.Builder
	fmt.Fprintf(&b, "coverage of %s (%s): tools %d/%d, parameters %d/%d, enum options %d/%d\n", esc(c.Server), c.ServerKey,
		c.ToolsCovered, c.ToolsTotal, c.ParamsCovered, c.ParamsTotal, c.OptionsCovered, c.OptionsTotal)
	for _, t := range c.Tools {
		mark := "-"
		if t.Calls > 0 {
			mark = "+"
		}
		fmt.Fprintf(&b, "  %s %s", mark, esc(t.Tool))
		if t.ReadOnly {
			b.WriteString(" [readOnly]")
		}
		if t.Calls > 0 {
			fmt.Fprintf(&b, ": %s in %s\n", plural(t.Calls, "call"), strings.Join(t.Cases, ", "))
		} else {
			b.WriteString(": not called\n")
		}
		for _, p := range t.Params {
			pm := "-"
			if p.Covered {
				pm = "+"
			}
			fmt.Fprintf(&b, "      %s %s", pm, esc(p.Name))
			if p.Required {
				b.WriteString(" (required)")
			}
			if p.Dynamic {
				b.WriteString(" (bound at run time)")
			}
			if len(p.Options) > 0 {
				var opts []string
				for _, o := range p.Options {
					om := "-"
					if o.Covered {
						om = "+"
					}
					opts = append(opts, om+esc(optionText(o.Value)))
				}
				fmt.Fprintf(&b, ": options %s", strings.Join(opts, " "))
			}
			b.WriteString("\n")
		}
	}
	for _, u := range c.Unknown {
		fmt.Fprintf(&b, "  ! %s: called by the cases, not in the archived catalog (sync the server or fix the cases)\n", esc(u))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
