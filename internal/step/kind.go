// Package step is Duet's registry of step kinds. A step kind is one entry
// (a Kind) that carries everything about it: its YAML schema (as data, which
// the JSON Schema of the suite format and the docs are generated from), its
// compile function (source → duet.Step, with line:col errors), its run
// function, its documentation and its line in the agent's format
// reference. Each kind lives in one file of this package (open.go,
// click.go, http.go, ...): adding a kind is adding a file and its test.
//
// The package sits between the two domain services that use it:
// internal/compiler drives Compiler over a suite file and asks the registry
// to compile each step; internal/engine runs a compiled step by handing its
// kind's Run function an Env — the case the step runs in, with the
// engine's services (the browser page, the HTTP client under the network
// guard, the MCP call as the executor behind the approval check). The step
// package imports neither: the compile side needs only the YAML source, and
// the run side only the Env and Page interfaces declared here, which the
// engine implements. The root package duet keeps the stored shape of a step
// (duet.Step) and the names of the kinds, as wire values.
package step

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/duet-test/duet"
)

// Section groups the kinds in the docs. Browser kinds need a page: the
// engine starts the case's browser session before their first step.
type Section int

// Sections.
const (
	Data Section = iota + 1
	Browser
	// Flow kinds run other steps (if, repeat, forEach, use): each of those
	// runs under its own timeout; the flow step's own timeout, when it has
	// one, bounds them all.
	Flow
)

// Kind is one step kind: the key a step names it by, its schema, how it
// compiles and how it runs.
type Kind struct {
	// Name is the key that names the kind in a step (and duet.Step.Kind).
	Name duet.StepKind
	// Section groups the kind in the docs; Browser kinds need a page.
	Section Section
	// Order places the kind in the docs and in the compiler's messages
	// that list kinds (ties: by name).
	Order int
	// Summary says in one line what a step of the kind does.
	Summary string
	// Form is the YAML schema of the step's body.
	Form Form
	// Example is YAML: one or more steps of the kind ("- kind: ..."), each
	// of which compiles (a test compiles them after an open step).
	Example string
	// Doc is more about the kind, in Markdown, for docs/suite-format.md.
	Doc string
	// Agent is the kind's entry in the agent's format reference
	// (internal/agent/format.md), in Markdown: what the model reads.
	Agent string
	// Compile reads the body n of the step st into st. It records every
	// problem with c.Errf at the node it concerns.
	Compile func(c *Compiler, st *duet.Step, n *Node)
	// Run runs the compiled step st in env. A value it returns is saved to
	// the variable saveAs (when not "") and kept as the step's output.
	Run func(ctx context.Context, env Env, st *duet.Step) (saveAs string, value any, err error)
	// Title names a step that has no name of its own; nil names it after
	// the kind and its first parameter ("click #buy").
	Title func(st *duet.Step) string
	// Assertion says that a step of the kind checks something: it may be
	// soft (soft: true records its failure and lets the case go on).
	Assertion bool
}

// NeedsBrowser reports whether steps of the kind need a browser session.
func (k *Kind) NeedsBrowser() bool { return k.Section == Browser }

// NeedsBrowser reports whether steps of the kind named name need a browser
// session (false for a name that is not a kind).
func NeedsBrowser(name duet.StepKind) bool {
	k := registry[name]
	return k != nil && k.NeedsBrowser()
}

// IsFlow reports whether steps of the kind named name run other steps.
func IsFlow(name duet.StepKind) bool {
	k := registry[name]
	return k != nil && k.Section == Flow
}

// UsesBrowser reports whether st, or a step it runs in its turn (the steps
// of an if, a loop, a flow), needs a browser session.
func UsesBrowser(st *duet.Step) bool {
	return !duet.WalkSteps([]duet.Step{*st}, func(s *duet.Step) bool { return !NeedsBrowser(s.Kind) })
}

// title is the default name of a step of kind k.
func (k *Kind) title(st *duet.Step) string {
	if k.Title != nil {
		return k.Title(st)
	}
	if b := st.Browser; b != nil {
		if b.Locator != nil {
			return string(st.Kind) + " " + b.Locator.String()
		}
		for _, s := range []string{b.URL, b.Selector, b.Key, b.Text, b.URLContains, b.URLMatches, b.Equals, b.Contains, b.Matches, b.From} {
			if s != "" {
				return string(st.Kind) + " " + s
			}
		}
	}
	return string(st.Kind)
}

// registry holds every kind by name. It is filled while the package is
// initialised (each kind's file registers its entry) and only read after.
var registry = map[duet.StepKind]*Kind{}

// register adds k to the registry. A kind without a compile or run
// function, documentation or an example, or a name used twice, is a
// programming error.
func register(k *Kind) *Kind {
	switch {
	case k.Name == "" || k.Compile == nil || k.Run == nil || k.Section == 0 || k.Summary == "" || k.Example == "" || k.Agent == "":
		panic(fmt.Sprintf("step: kind %q lacks a name, section, summary, example, agent entry, compile or run function", k.Name))
	case registry[k.Name] != nil:
		panic(fmt.Sprintf("step: kind %q registered twice", k.Name))
	case k.Name == "name" || k.Name == "timeout" || k.Name == "soft":
		panic(fmt.Sprintf("step: %q is a key of every step, not a kind", k.Name))
	}
	registry[k.Name] = k
	return k
}

// Lookup returns the kind named name, or nil.
func Lookup(name duet.StepKind) *Kind { return registry[name] }

// Kinds returns every kind, in their documentation order.
func Kinds() []*Kind { return slices.Clone(sorted()) }

var sorted = sync.OnceValue(func() []*Kind {
	out := make([]*Kind, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *Kind) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), strings.Compare(string(a.Name), string(b.Name)))
	})
	return out
})

// kindNames lists the kinds for messages, in their documentation order.
func kindNames() string {
	var s []string
	for _, k := range sorted() {
		s = append(s, string(k.Name))
	}
	return strings.Join(s, ", ")
}
