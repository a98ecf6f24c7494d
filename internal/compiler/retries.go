package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
)

// The format's own bounds on retries, parallel cases and tags; a
// deployment may allow less (Options.MaxRetries, Options.MaxParallel).
const (
	MaxRetries  = 10
	MaxParallel = 64
	maxTags     = 20
)

var tagRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9@][A-Za-z0-9@._:/-]{0,49}$`) })

// ValidTag reports whether s may be a tag: letters, digits and . _ : / - @,
// at most 50, starting with a letter, a digit or @ (Playwright's @smoke).
func ValidTag(s string) bool { return tagRe().MatchString(s) }

// count reads n, a whole number from 0 to its bound: the format's (max),
// or the deployment's (deployment > 0, named by env) when lower.
func (c *compiler) count(n *step.Node, key string, min, max, deployment int, env string) int {
	v, ok := n.Int()
	if !ok || v < int64(min) || v > int64(max) {
		c.Errf(n, "%s must be a whole number from %d to %d", key, min, max)
		return 0
	}
	if deployment > 0 && v > int64(deployment) {
		c.Errf(n, "%s: %d is more than this deployment allows (%s=%d)", key, v, env, deployment)
		return 0
	}
	return int(v)
}

// retries reads the retries: of n (a task or a case); given says whether
// it was there.
func (c *compiler) retries(n *step.Node) (r int, given bool) {
	v := n.Get("retries")
	if v == nil {
		return 0, false
	}
	return c.count(v, "retries", 0, MaxRetries, c.opts.MaxRetries, "DUET_MAX_RETRIES"), true
}

// parallel reads the parallel: of a task.
func (c *compiler) parallel(n *step.Node) int {
	v := n.Get("parallel")
	if v == nil {
		return 0
	}
	return c.count(v, "parallel", 1, MaxParallel, c.opts.MaxParallel, "DUET_MAX_PARALLEL")
}

// tags reads the tags: of n added to inherited (a task's), in order,
// each once.
func (c *compiler) tags(n *step.Node, inherited []string) []string {
	out := slices.Clone(inherited)
	v := n.Get("tags")
	if v == nil {
		return out
	}
	items := []*step.Node{v}
	if v.Type == step.SeqNode {
		items = v.Items
	}
	for _, it := range items {
		s, ok := it.Str()
		if !ok || !ValidTag(s) {
			c.Errf(it, "tags: %s is not a tag: letters, digits and . _ : / - @, at most 50 (such as smoke or @checkout)", describe(it))
			continue
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > maxTags {
		c.Errf(v, "tags: at most %d tags, got %d", maxTags, len(out))
	}
	return out
}

// describe quotes a scalar node, or names its type.
func describe(n *step.Node) string {
	if s, ok := n.Str(); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(n.Type)
}

// taskRunSettings reads a task's retries, timeout, tags and parallel.
func (c *compiler) taskRunSettings(n *step.Node, t *duet.Task) {
	t.Retries, _ = c.retries(n)
	if tn := n.Get("timeout"); tn != nil {
		t.CaseTimeoutMs = c.Timeout(tn, maxCaseTimeout)
	}
	t.Tags = c.tags(n, nil)
	t.Parallel = c.parallel(n)
}

// caseRunSettings reads a case's retries and tags (its task's unless it
// says) and gives it its task's timeout when it has none of its own.
func (c *compiler) caseRunSettings(n *step.Node, task *duet.Task, cs *duet.Case) {
	r, given := c.retries(n)
	if !given {
		r = task.Retries
	}
	cs.Retries = r
	cs.Tags = c.tags(n, task.Tags)
	if cs.TimeoutMs == 0 {
		cs.TimeoutMs = task.CaseTimeoutMs
	}
}

// scheduleTag is a schedule's tags: and where they are.
type scheduleTag struct {
	node *step.Node
	tags []string
}

// checkScheduleTags refuses a schedule tag no case has: its runs would
// select nothing.
func (c *compiler) checkScheduleTags(cases []*duet.Case) {
	have := map[string]bool{}
	for _, cs := range cases {
		for _, t := range cs.Tags {
			have[t] = true
		}
	}
	for _, st := range c.scheduleTags {
		for _, t := range st.tags {
			if !have[t] {
				c.Errf(st.node, "schedule tags: no case has the tag %q; the schedule's runs would run nothing", t)
			}
		}
	}
}
