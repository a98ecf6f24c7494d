package step_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// writtenStoreSteps are storeSteps as written by hand: the steps a frozen
// plan of the AI steps resolves to.
const writtenStoreSteps = `      - set: {email: "'ada@example.com'"}
      - open: /lab/store
      - click: {role: button, name: Add to cart, exact: true, within: 'article[data-testid="p-wh1000"]'}
      - click: {role: button, name: '/^Cart \(\d+\)$/'}
      - fill: {role: textbox, name: E-mail address, exact: true, value: "${email}"}
      - click: {role: button, name: Subscribe, exact: true}
      - assertText: {role: status, name: Subscription, equals: "Subscribed: ada@example.com"}
      - assertText: {selector: "#total", equals: "199"}
`

// BenchmarkAICachedCase runs, each iteration, the store case written with
// AI steps (ai, aiFill, aiTap) from an empty cache against the scripted
// model (first), the same case again replayed from the shared cache
// (cached), and the same case written by hand (written) — these two in
// alternating order — in real Chromium on the sample shop, each as a whole run through
// the engine and its SQLite store. The metrics are the mean wall time of
// a run of each (ms/first, ms/cached, ms/written) and the ratio
// cached/written of this one run of the benchmark.
//
//	go test -run '^$' -bench BenchmarkAICachedCase -benchtime 10x ./internal/step/
func BenchmarkAICachedCase(b *testing.B) {
	var calls atomic.Int32
	base := sampletest.Shop(b)
	_, opts, _ := aiModel(b, times(4*b.N+8, storeModel(b, &calls))...)
	ai := newCaseOnDB(b, base, storeSteps, opts)
	hand := newCaseOnDB(b, base, writtenStoreSteps, opts)
	// Warm the browser pool and the page.
	if x := hand.run("alice"); x.Status != duet.StatusPassed {
		b.Fatalf("the written case: %s", describe(x))
	}
	var first, cached, written time.Duration
	stepsAI, stepsHand := make([]int64, 8), make([]int64, 8)
	b.ResetTimer()
	for i := range b.N {
		if _, err := ai.db.ClearAIPlans(b.Context(), "alice", ai.task, ""); err != nil {
			b.Fatal(err)
		}
		before := calls.Load()
		t0 := time.Now()
		x := ai.run("alice")
		first += time.Since(t0)
		if x.Status != duet.StatusPassed || calls.Load() == before {
			b.Fatalf("the first run: %d calls, %s", calls.Load()-before, describe(x))
		}
		// The cached and the written runs alternate which goes first, so
		// that neither always runs on a page or a pool the other warmed.
		var cx, wx *duet.Execution
		runCached := func() {
			before := calls.Load()
			t0 := time.Now()
			cx = ai.run("alice")
			cached += time.Since(t0)
			if cx.Status != duet.StatusPassed || calls.Load() != before {
				b.Fatalf("the cached run: %d calls, %s", calls.Load()-before, describe(cx))
			}
		}
		runWritten := func() {
			t0 := time.Now()
			wx = hand.run("alice")
			written += time.Since(t0)
		}
		if i%2 == 0 {
			runCached()
			runWritten()
		} else {
			runWritten()
			runCached()
		}
		x = wx
		for j, r := range x.Results {
			if j < len(cx.Results) {
				stepsAI[j] += cx.Results[j].DurationMs
			}
			stepsHand[j] += r.DurationMs
		}
		if x.Status != duet.StatusPassed {
			b.Fatalf("the written case: %s", describe(x))
		}
	}
	b.Logf("the steps' mean milliseconds, cached AI case: %v, written case: %v", div(stepsAI, b.N), div(stepsHand, b.N))
	n := float64(b.N)
	b.ReportMetric(float64(first.Milliseconds())/n, "ms/first")
	b.ReportMetric(float64(cached.Milliseconds())/n, "ms/cached")
	b.ReportMetric(float64(written.Milliseconds())/n, "ms/written")
	b.ReportMetric(float64(cached)/float64(written), "cached/written")
}

func div(l []int64, n int) []int64 {
	out := make([]int64, len(l))
	for i, v := range l {
		out[i] = v / int64(n)
	}
	return out
}
