package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// TraceChromium records Chromium's own trace (the Tracing domain: the
// tasks of every thread of every process of the browser, with their CPU
// time) of the pool's first browser process, in the trace event categories
// given ("toplevel,mojom,devtools" shows what each thread spends on which
// task, IPC interface and protocol command). stop ends the recording and
// returns the trace as a JSON trace file ({"traceEvents": [...]}) that
// chrome://tracing, Perfetto and bench/cmd/chromeprof read. It
// is a profiling aid for benchmarks (BenchmarkBrowserCaseCPU with
// DUET_BENCH_CHROMIUM_TRACE); a browser records one trace at a time.
//
// Errors: CodeBrowserUnavailable when the pool has started no browser yet.
func (p *Pool) TraceChromium(ctx context.Context, categories []string) (stop func(context.Context) ([]byte, error), err error) {
	p.mu.Lock()
	var b *process
	for _, x := range p.browsers {
		if !x.dead {
			b = x
			break
		}
	}
	p.mu.Unlock()
	if b == nil {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "trace Chromium: no browser process started yet")
	}
	select {
	case <-b.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if b.err != nil {
		return nil, b.err
	}
	lctx, cancel := context.WithCancel(b.ctx)
	var (
		mu     sync.Mutex
		events []jsonv2.Value
		done   = make(chan struct{})
	)
	// One listener, in the order the browser sends them: every
	// dataCollected comes before tracingComplete.
	if err := chromedp.ListenBrowser(lctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			events = append(events, e.Value...)
			mu.Unlock()
		case *tracing.EventTracingComplete:
			select {
			case <-done:
			default:
				close(done)
			}
		}
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("trace Chromium: %w", err)
	}
	cctx, ccancel := bind(b.ctx, ctx)
	defer ccancel()
	_, err = chromedp.CallBrowser(cctx, tracing.Start, tracing.StartParams{
		TransferMode: tracing.StartTransferModeReportEvents,
		TraceConfig:  &tracing.TraceConfig{IncludedCategories: categories, RecordMode: tracing.TraceConfigRecordModeRecordAsMuchAsPossible},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("trace Chromium: %w", err)
	}
	return func(ctx context.Context) ([]byte, error) {
		defer cancel()
		cctx, ccancel := bind(b.ctx, ctx)
		defer ccancel()
		if _, err := chromedp.CallBrowser(cctx, tracing.End, cdp.Empty{}); err != nil {
			return nil, fmt.Errorf("trace Chromium: %w", err)
		}
		select {
		case <-done:
		case <-cctx.Done():
			return nil, fmt.Errorf("trace Chromium: the trace did not end: %w", cctx.Err())
		}
		mu.Lock()
		defer mu.Unlock()
		raw := make([]json.RawMessage, len(events))
		for i, v := range events {
			raw[i] = json.RawMessage(v)
		}
		return json.Marshal(map[string]any{"traceEvents": raw})
	}, nil
}
