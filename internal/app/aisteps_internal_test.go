package app

import (
	"log/slog"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestAIStepSettings: the DUET_LLM_* budgets and vision are read strictly
// into the AI steps' configuration, with the store counting each user's
// day; a malformed value stops the start with INVALID_ARGUMENT.
func TestAIStepSettings(t *testing.T) {
	t.Parallel()
	a := &App{Logger: slog.New(slog.DiscardHandler)}
	env := func(kv map[string]string) Options {
		base := map[string]string{"DUET_LLM_BASE_URL": "http://127.0.0.1:1/v1", "DUET_LLM_MODEL": "m"}
		for k, v := range kv {
			base[k] = v
		}
		return Options{Getenv: func(k string) string { return base[k] }}
	}
	var usage duet.LLMUsageStore // the engine's store in production
	ai, err := a.aiSteps(env(nil), usage)
	if err != nil || ai.UserDayTokens != 0 || ai.RunTime != 0 || ai.Vision {
		t.Fatalf("defaults: %+v %v", ai, err)
	}
	ai, err = a.aiSteps(env(map[string]string{EnvLLMUserDayTokens: "500000", EnvLLMRunTime: "5m", EnvLLMVision: "true", EnvLLMRunTokens: "90000"}), usage)
	if err != nil || ai.UserDayTokens != 500000 || ai.RunTime != 5*time.Minute || !ai.Vision || ai.RunTokens != 90000 {
		t.Fatalf("set: %+v %v", ai, err)
	}
	for k, v := range map[string]string{EnvLLMUserDayTokens: "-1", EnvLLMRunTime: "5", EnvLLMVision: "True", EnvLLMRunTokens: "lots"} {
		if _, err := a.aiSteps(env(map[string]string{k: v}), usage); duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("%s=%q: got %v, want INVALID_ARGUMENT", k, v, err)
		}
	}
}
