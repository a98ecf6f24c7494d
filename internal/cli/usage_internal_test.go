package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagUsageHasNoBackquotes: pflag takes the first `quoted` word of a
// flag's usage as its placeholder, so backquotes in a usage text render as
// "--auth server login" in --help. No flag may have them.
func TestFlagUsageHasNoBackquotes(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			n++
			if strings.Contains(f.Usage, "`") {
				placeholder, _ := pflag.UnquoteUsage(f)
				t.Errorf("%s --%s: usage has backquotes (rendered as --%s %s): %q", c.CommandPath(), f.Name, f.Name, placeholder, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(Env{}))
	if n < 50 {
		t.Fatalf("visited %d flags; the walk is broken", n)
	}
}

// TestReadOnlyCommandsExist: every command named read-only is one.
func TestReadOnlyCommandsExist(t *testing.T) {
	t.Parallel()
	root := newRoot(Env{})
	for _, path := range readOnlyCommands {
		c, args, err := root.Find(strings.Fields(path))
		if err != nil || len(args) > 0 || c.Annotations[readOnlyAnnotation] == "" {
			t.Errorf("read-only command %q: not found (%v, extra %v)", path, err, args)
		}
	}
}
