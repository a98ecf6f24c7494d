package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/duet-test/duet"
)

// maxRetriesAtAll bounds a run's retries where the deployment sets no
// bound of its own (the suite format's bound, compiler.MaxRetries).
const maxRetriesAtAll = 10

// checkRunSelection checks a start's retries (within the deployment's
// maxRetries, DUET_MAX_RETRIES) and selection arguments.
func checkRunSelection(in StartRunIn, maxRetries int) error {
	if in.Retries != nil {
		limit, env := maxRetriesAtAll, ""
		if maxRetries > 0 && maxRetries < limit {
			limit, env = maxRetries, fmt.Sprintf(" (DUET_MAX_RETRIES=%d)", maxRetries)
		}
		if *in.Retries < 0 || *in.Retries > limit {
			return duet.Errorf(duet.CodeInvalidArgument, "retries must be from 0 to %d%s, got %d", limit, env, *in.Retries)
		}
	}
	for _, list := range [][]string{in.Tags, in.ExcludeTags} {
		if len(list) > 50 {
			return duet.Errorf(duet.CodeInvalidArgument, "at most 50 tags to select by, got %d", len(list))
		}
		for _, t := range list {
			if t == "" || len(t) > 50 {
				return duet.Errorf(duet.CodeInvalidArgument, "tag %q: a tag is 1 to 50 characters", t)
			}
		}
	}
	if len(in.Grep) > 200 {
		return duet.Errorf(duet.CodeInvalidArgument, "grep is at most 200 characters")
	}
	return nil
}

// filterCases keeps the cases a start selects by tags, excluded tags and
// grep; none selected is INVALID_ARGUMENT, naming the task's tags.
func filterCases(task *duet.Task, cases []*duet.Case, in StartRunIn) ([]*duet.Case, error) {
	if len(in.Tags) == 0 && len(in.ExcludeTags) == 0 && in.Grep == "" {
		return cases, nil
	}
	grep := strings.ToLower(in.Grep)
	var out []*duet.Case
	known := map[string]bool{}
	for _, cs := range cases {
		for _, t := range cs.Tags {
			known[t] = true
		}
		if CaseSelected(cs, in.Tags, in.ExcludeTags, grep) {
			out = append(out, cs)
		}
	}
	if len(out) == 0 {
		tags := make([]string, 0, len(known))
		for t := range known {
			tags = append(tags, t)
		}
		slices.Sort(tags)
		have := "no tags"
		if len(tags) > 0 {
			have = "tags " + strings.Join(tags, ", ")
		}
		return nil, duet.Errorf(duet.CodeInvalidArgument, "no case of task %s matches the selection (tags %v, excluded %v, grep %q); its cases have %s", task.ID, in.Tags, in.ExcludeTags, in.Grep, have)
	}
	return out, nil
}

// CaseSelected reports whether cs has one of tags (any, when none), none
// of exclude, and grep (lower case) in its title or key.
func CaseSelected(cs *duet.Case, tags, exclude []string, grep string) bool {
	if len(tags) > 0 && !slices.ContainsFunc(cs.Tags, func(t string) bool { return slices.Contains(tags, t) }) {
		return false
	}
	if slices.ContainsFunc(cs.Tags, func(t string) bool { return slices.Contains(exclude, t) }) {
		return false
	}
	return grep == "" || strings.Contains(strings.ToLower(cs.Title), grep) || strings.Contains(strings.ToLower(cs.Key), grep)
}

// sortedSet returns list sorted, each once (nil for none): how a start's
// tags are hashed for its idempotency.
func sortedSet(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}
