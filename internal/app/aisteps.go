package app

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/step"
)

// EnvLLMStepTokens is the token budget of an AI step without maxTokens.
const EnvLLMStepTokens = "DUET_LLM_STEP_TOKENS"

// EnvLLMRunTokens is the token budget of all the AI steps of a run.
const EnvLLMRunTokens = "DUET_LLM_RUN_TOKENS"

// The other budgets of AI steps, and vision (docs/ai-steps.md).
const (
	EnvLLMRunTime       = "DUET_LLM_RUN_TIME"        // how long a run's AI steps may wait for the model
	EnvLLMUserDayTokens = "DUET_LLM_USER_DAY_TOKENS" // each user's tokens per UTC day
	EnvLLMVision        = "DUET_LLM_VISION"          // show the model a screenshot too
)

// aiSteps returns the model of the engine's AI steps, as the DUET_LLM_*
// variables configure it: nil when no model is configured (the steps then
// fail with LLM_NOT_CONFIGURED), an error when a variable is malformed.
func (a *App) aiSteps(opts Options, usage duet.LLMUsageStore) (*step.AIConfig, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := llm.ConfigFromEnv(getenv)
	if duet.ErrorCode(err) == duet.CodeLLMNotConfigured {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg.Logger = a.Logger
	cfg.HTTPClient = &http.Client{Transport: a.Telemetry.LLMTransport(nil)} // requests and tokens as metrics
	client, err := llm.New(cfg)
	if err != nil {
		return nil, err
	}
	ai := &step.AIConfig{Model: client, Usage: usage}
	if s := strings.TrimSpace(getenv(EnvLLMStepTokens)); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "%s=%q is not a positive number of tokens", EnvLLMStepTokens, s)
		}
		ai.StepTokens = n
	}
	for _, b := range []struct {
		env string
		to  *int
	}{{EnvLLMRunTokens, &ai.RunTokens}, {EnvLLMUserDayTokens, &ai.UserDayTokens}} {
		if s := strings.TrimSpace(getenv(b.env)); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return nil, duet.Errorf(duet.CodeInvalidArgument, "%s=%q is not a number of tokens (0: no budget)", b.env, s)
			}
			*b.to = n
		}
	}
	if s := strings.TrimSpace(getenv(EnvLLMRunTime)); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "%s=%q is not a duration such as 5m (0: no budget)", EnvLLMRunTime, s)
		}
		ai.RunTime = d
	}
	switch s := strings.TrimSpace(getenv(EnvLLMVision)); s {
	case "", "false":
	case "true":
		ai.Vision = true
	default:
		return nil, duet.Errorf(duet.CodeInvalidArgument, "%s=%q: want true or false", EnvLLMVision, s)
	}
	a.Logger.Debug("AI steps use the configured model", slog.Any("llm", client), slog.String("budget", fmt.Sprint(ai.StepTokens)))
	return ai, nil
}
