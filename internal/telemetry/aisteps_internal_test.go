package telemetry

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/duet-test/duet"
)

// TestAIStepMetrics: a finished step's AI usage — its own and that of the
// AI steps a flow step ran — becomes metrics: model calls and tokens by
// step kind, and whether each step asked the model, replayed the cache or
// healed.
func TestAIStepMetrics(t *testing.T) {
	tel := New(Options{Metrics: true})
	tel.stepDone("x1", &duet.StepResult{Kind: "aiAssert", Status: duet.StatusPassed,
		AI: &duet.AIUsage{Calls: 2, PromptTokens: 900, CompletionTokens: 40, TotalTokens: 940}})
	tel.stepDone("x1", &duet.StepResult{Kind: "ai", Status: duet.StatusPassed, AI: &duet.AIUsage{Cached: true}})
	tel.stepDone("x1", &duet.StepResult{Kind: "loop", Status: duet.StatusPassed, Children: duet.StepResults{
		{Kind: "ai", Status: duet.StatusPassed, AI: &duet.AIUsage{Calls: 1, PromptTokens: 700, CompletionTokens: 60, TotalTokens: 760, Healed: true}},
		{Kind: "click", Status: duet.StatusPassed},
	}})
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(tel.Registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for _, want := range []string{
		`duet_ai_step_model_calls_total{kind="aiAssert"} 2`,
		`duet_ai_step_tokens_total{kind="aiAssert",type="prompt"} 900`,
		`duet_ai_step_tokens_total{kind="aiAssert",type="completion"} 40`,
		`duet_ai_steps_total{kind="aiAssert",source="model"} 1`,
		`duet_ai_steps_total{kind="ai",source="cache"} 1`,
		`duet_ai_steps_total{kind="ai",source="healed"} 1`, // in a loop
		`duet_ai_step_model_calls_total{kind="ai"} 1`,
		`duet_ai_step_tokens_total{kind="ai",type="prompt"} 700`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the metrics lack %s", want)
		}
	}
	if n := strings.Count(text, "\nduet_ai_steps_total{"); n != 3 {
		t.Errorf("%d AI step series, want 3 (a click is no AI step)", n)
	}
}
