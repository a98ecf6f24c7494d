// Package llm is a small client for OpenAI-compatible chat-completions
// endpoints with tool calling: hosted APIs as well as local servers such as
// Ollama and vLLM.
//
// It speaks one endpoint, POST {BaseURL}/chat/completions, with the standard
// library only. A [Client] retries rate limits, server errors and refused or
// reset connections with exponential backoff and full jitter, honours
// Retry-After, bounds every attempt with a timeout, and reports failures as
// *duet.Error values with stable codes:
//
//   - LLM_NOT_CONFIGURED: no base URL or model (see [ConfigFromEnv]).
//   - INVALID_ARGUMENT: a malformed configuration or request.
//   - RATE_LIMITED: still HTTP 429 after the last retry.
//   - TIMEOUT: an attempt, or the caller's deadline, ran out.
//   - CANCELLED: the caller's context was cancelled.
//   - LLM_ERROR: anything else, with the HTTP status and the provider's
//     error message.
//
// The API key never appears in errors, logs or the printed form of a
// [Config] or [Client], and request and response bodies are never logged.
//
// Package llmtest holds a scripted server for tests.
package llm
