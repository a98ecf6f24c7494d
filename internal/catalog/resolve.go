package catalog

import (
	"context"
	"strings"

	"github.com/duet-test/duet"
)

// FindTask finds a task viewer can see by its id or by its name: viewer's
// own task of that name, else the one task of that name shared with viewer.
// Every door that takes a task (the tools, REST, the console, the CLI)
// resolves it here, so a name works wherever an id does. Returns NOT_FOUND,
// and INVALID_ARGUMENT when several tasks shared with viewer have the name.
func FindTask(ctx context.Context, store duet.Store, viewer, ref string) (*duet.Task, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "name the task: its id (task_…) or its name")
	}
	t, err := store.FindTaskByID(ctx, viewer, ref)
	if err == nil || duet.ErrorCode(err) != duet.CodeNotFound {
		return t, err
	}
	if t, err := store.FindTaskByName(ctx, viewer, ref); err == nil {
		return t, nil
	} else if duet.ErrorCode(err) != duet.CodeNotFound {
		return nil, err
	}
	var match []*duet.Task
	for t, err := range duet.Paged(func(cursor string) ([]*duet.Task, string, error) {
		tasks, next, _, err := store.FindTasks(ctx, duet.TaskFilter{Viewer: viewer, Query: ref, Cursor: cursor, Limit: 100})
		return tasks, next, err
	}) {
		if err != nil {
			return nil, err
		}
		if t.Name == ref {
			match = append(match, t)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return nil, duet.Errorf(duet.CodeNotFound, "task %q not found (list_test_tasks, or duet task list, shows the tasks you can see)", ref)
	}
	ids := make([]string, 0, len(match))
	for _, t := range match {
		ids = append(ids, t.ID+" (owner "+t.Owner+")")
	}
	return nil, duet.Errorf(duet.CodeInvalidArgument, "%d tasks named %q are shared with you: use the task's id, one of %s", len(match), ref, strings.Join(ids, ", "))
}
