package telemetry

import (
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/duet-test/duet"
)

// metrics are Duet's collectors. Every label value is taken from a closed
// set (label below), so a client cannot grow the number of series.
type metrics struct {
	calls        *prometheus.CounterVec
	callDuration *prometheus.HistogramVec

	runsCreated  *prometheus.CounterVec
	runsFinished *prometheus.CounterVec
	runDuration  *prometheus.HistogramVec
	queueDepth   prometheus.Gauge
	queueWait    prometheus.Histogram
	executions   *prometheus.CounterVec
	steps        *prometheus.CounterVec
	stepDuration *prometheus.HistogramVec

	invocations        *prometheus.CounterVec
	invocationDuration *prometheus.HistogramVec

	llmRequests *prometheus.CounterVec
	llmTokens   *prometheus.CounterVec

	aiSteps  *prometheus.CounterVec
	aiCalls  *prometheus.CounterVec
	aiTokens *prometheus.CounterVec

	mu    sync.Mutex
	tools []string // tool names that may be labels
}

var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func newMetrics(r *prometheus.Registry) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_calls_total",
			Help: "Calls through the catalog's governance (every door, every MCP method, refusals included), by method, tool, source (transport: mcp, mcp-lite, stdio, cli, ...) and outcome code."},
			[]string{"method", "tool", "source", "code"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duet_call_duration_seconds",
			Help: "Duration of governed calls.", Buckets: latencyBuckets}, []string{"method", "tool", "source"}),
		runsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_runs_created_total",
			Help: "Runs started (idempotent replays not counted), by source."}, []string{"source"}),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_runs_finished_total",
			Help: "Runs finished, by final status."}, []string{"status"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duet_run_duration_seconds",
			Help: "From a run's start (claim by a worker) to its end.", Buckets: []float64{.1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}}, []string{"status"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "duet_run_queue_depth",
			Help: "Runs waiting for a worker: created here minus first claimed here (sum over instances for the whole queue)."}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "duet_run_queue_wait_seconds",
			Help: "Time from a run's creation to its first claim by a worker.", Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900}}),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_case_executions_total",
			Help: "Case executions finished, by status."}, []string{"status"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_steps_total",
			Help: "Steps executed, by kind and outcome status."}, []string{"kind", "status"}),
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duet_step_duration_seconds",
			Help: "Duration of steps, by kind.", Buckets: latencyBuckets}, []string{"kind"}),
		invocations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_invocations_total",
			Help: "Calls to registered MCP servers through invoke(), by serverKey and outcome code."}, []string{"server_key", "code"}),
		invocationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duet_invocation_duration_seconds",
			Help: "Duration of invoke() calls, by serverKey.", Buckets: latencyBuckets}, []string{"server_key"}),
		llmRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_llm_requests_total",
			Help: "Requests to the LLM provider, by HTTP status class (2xx, 4xx, 5xx, error)."}, []string{"status"}),
		llmTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_llm_tokens_total",
			Help: "LLM tokens reported by the provider, by kind (prompt, completion)."}, []string{"kind"}),
		aiSteps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_ai_steps_total",
			Help: "AI steps (ai, aiTap, aiFill, aiAssert, aiQuery, aiWaitFor) finished, by step kind and how they found their way: model (asked the model), cache (replayed a cached plan, no model call) or healed (a stale plan, the model asked again)."},
			[]string{"kind", "source"}),
		aiCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_ai_step_model_calls_total",
			Help: "Model calls made by AI steps, by step kind (failed calls included)."}, []string{"kind"}),
		aiTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "duet_ai_step_tokens_total",
			Help: "Tokens the model calls of AI steps spent as the endpoint reported them, by step kind and type (prompt, completion)."},
			[]string{"kind", "type"}),
	}
	r.MustRegister(m.collectors()...)
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.calls, m.callDuration, m.runsCreated, m.runsFinished, m.runDuration, m.queueDepth, m.queueWait,
		m.executions, m.steps, m.stepDuration, m.invocations, m.invocationDuration, m.llmRequests, m.llmTokens,
		m.aiSteps, m.aiCalls, m.aiTokens}
}

// SetTools names the tools that may appear as a label (the catalog's);
// any other name is counted as "unknown".
func (t *Telemetry) SetTools(names []string) {
	if t.m == nil {
		return
	}
	t.m.mu.Lock()
	t.m.tools = slices.Clone(names)
	t.m.mu.Unlock()
}

// Methods that may be a label; any other is "other".
var methods = []string{
	"tools/call", "tools/list", "resources/read", "resources/list", "resources/templates/list", "resources/subscribe",
	"resources/unsubscribe", "prompts/get", "prompts/list", "initialize", "server/discover", "ping",
	"completion/complete", "subscriptions/listen", "logging/setLevel",
}

// labelMethod maps an audit method to a label: MCP methods, "http" for a
// request refused at the door, the CLI's actions by their first word.
func labelMethod(m string) string {
	switch {
	case slices.Contains(methods, m):
		return m
	case strings.HasPrefix(m, "http "):
		return "http"
	case strings.HasPrefix(m, "notifications/"):
		return "notifications"
	}
	return "other"
}

func (m *metrics) labelTool(method, tool string) string {
	if method != "tools/call" || tool == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Contains(m.tools, tool) {
		return tool
	}
	return "unknown"
}

var sources = []duet.CallSource{duet.SourceMCP, duet.SourceMCPLite, duet.SourceStdio, duet.SourceCLI, duet.SourceAPI,
	duet.SourceWeb, duet.SourceAgent, duet.SourceEngine, duet.SourcePostRun, duet.SourceOAuth, duet.SourceSchedule}

func labelSource(s duet.CallSource) string {
	if slices.Contains(sources, s) {
		return string(s)
	}
	return "other"
}

func labelCode(c duet.Code) string {
	if c == duet.OutcomeOK || slices.Contains(duet.Codes(), c) {
		return string(c)
	}
	return "other"
}

func labelStatus(s duet.RunStatus) string {
	switch s {
	case duet.StatusQueued, duet.StatusRunning, duet.StatusPassed, duet.StatusFailed, duet.StatusError, duet.StatusCancelled, duet.StatusSkipped, duet.StatusPending, duet.StatusFlaky:
		return string(s)
	}
	return "other"
}

// BrowserStats reports the browser pool: sessions in use, NewSession calls
// waiting, browser processes.
type BrowserStats func() (inUse, waiting, processes int)

// WatchBrowsers exports the pool's gauges, read at each scrape.
func (t *Telemetry) WatchBrowsers(stats BrowserStats) {
	if t.m == nil {
		return
	}
	gauge := func(name, help string, pick func(a, b, c int) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			a, b, c := stats()
			return float64(pick(a, b, c))
		})
	}
	t.Registry.MustRegister(
		gauge("duet_browser_sessions_in_use", "Browser sessions open (steps using a browser).", func(a, _, _ int) int { return a }),
		gauge("duet_browser_waiting", "Executions waiting for a free browser slot.", func(_, b, _ int) int { return b }),
		gauge("duet_browser_processes", "Browser processes running or starting.", func(_, _, c int) int { return c }),
	)
}
