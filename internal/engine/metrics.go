package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/duet-test/duet"
)

// RecordMetrics keeps the page-speed values an assertPerformance step
// measured with the run (step.MetricRecorder), under the worker's lease:
// the console's trends page draws them per run.
func (cr *caseRun) RecordMetrics(ctx context.Context, st *duet.Step, values map[string]float64) error {
	ms := make([]*duet.Metric, 0, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		ms = append(ms, &duet.Metric{RunID: cr.run.ID, ExecutionID: cr.x.ID, TaskID: cr.task.ID, CaseKey: cr.x.CaseKey, StepIndex: st.Index, Name: k, Value: values[k]})
	}
	return cr.w.do(ctx, func(ctx context.Context, l duet.Lease) error { return cr.e.store.SaveMetrics(ctx, l, ms) })
}
