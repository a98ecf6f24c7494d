package api

import "testing"

// TestMergeCase: the recorder's case replaces the item with its key, or
// is added after the last item, and every other line — comments, blank
// lines, the items around it, what follows the list — stays as written;
// a source whose cases: list is not a block list is not edited.
func TestMergeCase(t *testing.T) {
	const suite = "# the shop\ntask: {name: shop}   # the task\ncases:\n  # the first\n  - key: a\n    title: A   # kept\n    steps:\n      - set: {x: '1'}\n\n  # b's comment\n  - key: b\n    steps:\n      - set: {x: '2'}\n# after the list\nschedule:\n  - {name: nightly, cron: '0 2 * * *'}\n"
	rec := "key: a\ntitle: Recorded\nsteps:\n  - open: /login\n"
	for _, tc := range []struct{ name, src, key, item, want string }{
		{"replaces its key's item", suite, "a", rec,
			"# the shop\ntask: {name: shop}   # the task\ncases:\n  # the first\n  - key: a\n    title: Recorded\n    steps:\n      - open: /login\n\n  # b's comment\n  - key: b\n    steps:\n      - set: {x: '2'}\n# after the list\nschedule:\n  - {name: nightly, cron: '0 2 * * *'}\n"},
		{"replaces the last item", suite, "b", "key: b\nsteps:\n  - open: /b\n",
			"# the shop\ntask: {name: shop}   # the task\ncases:\n  # the first\n  - key: a\n    title: A   # kept\n    steps:\n      - set: {x: '1'}\n\n  # b's comment\n  - key: b\n    steps:\n      - open: /b\n# after the list\nschedule:\n  - {name: nightly, cron: '0 2 * * *'}\n"},
		{"adds a new case after the last", suite, "c", "key: c\nsteps:\n  - open: /c\n",
			"# the shop\ntask: {name: shop}   # the task\ncases:\n  # the first\n  - key: a\n    title: A   # kept\n    steps:\n      - set: {x: '1'}\n\n  # b's comment\n  - key: b\n    steps:\n      - set: {x: '2'}\n  - key: c\n    steps:\n      - open: /c\n# after the list\nschedule:\n  - {name: nightly, cron: '0 2 * * *'}\n"},
		{"a list at column 1, at the end", "task: {name: shop}\ncases:\n- key: a\n  steps:\n    - set: {x: '1'}\n", "b", "key: b\nsteps:\n  - open: /b",
			"task: {name: shop}\ncases:\n- key: a\n  steps:\n    - set: {x: '1'}\n- key: b\n  steps:\n    - open: /b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mergeCase(tc.src, tc.key, tc.item)
			if !ok || got != tc.want {
				t.Errorf("got (%v)\n%s\nwant\n%s", ok, got, tc.want)
			}
		})
	}
	for _, src := range []string{"task: {name: shop}\ncases: [{key: a, steps: [{set: {x: '1'}}]}]\n", "task: {name: shop}\n", "cases:\n  - key: [\n"} {
		if got, ok := mergeCase(src, "a", rec); ok {
			t.Errorf("%q was edited: %q", src, got)
		}
	}
}
