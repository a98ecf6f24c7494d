package cli

import (
	"slices"
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

// notAUser are the commands that do not act as a user: they run Duet
// itself on this machine (serve, worker, migrate, vault, demo, sample),
// print what needs no one (config, schema), or keep a token (login,
// logout: the token says whose it is).
var notAUser = []string{"duet config", "duet demo", "duet gc", "duet login", "duet logout", "duet migrate status", "duet migrate up",
	"duet sample order-server", "duet sample shop", "duet schema suite", "duet serve", "duet vault rotate", "duet worker"}

// TestEveryCommandActsAsAUser: one rule for every command that acts as a
// user — --as, else DUET_USER, else the operating-system user (issue 31
// point 16: `duet mcp --as` and `duet audit --as` were unknown flags).
// Every leaf command has --as unless it is one of notAUser.
func TestEveryCommandActsAsAUser(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() && c.Name() != "help" && c.Name() != "completion" && c.Parent() != nil && c.Parent().Name() != "completion" {
			n++
			has := c.LocalFlags().Lookup("as") != nil
			exempt := slices.Contains(notAUser, c.CommandPath())
			switch {
			case !has && !exempt:
				t.Errorf("%s has no --as: every command that acts as a user takes --as (else DUET_USER, else the operating-system user)", c.CommandPath())
			case has && exempt:
				t.Errorf("%s takes --as but is listed as acting as no user", c.CommandPath())
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(Env{}))
	if n < 50 {
		t.Fatalf("visited %d commands; the walk is broken", n)
	}
}
