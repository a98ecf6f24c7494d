package duet

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Codes cross every wire
// (HTTP, JSON-RPC, MCP tool results, CLI output, step results), so values are
// only ever added, never renamed or removed.
type Code string

// Error codes. Keep the list in sync with the transport tables (a test checks
// that every code has a row).
const (
	// Generic codes.
	CodeInvalidArgument     Code = "INVALID_ARGUMENT"
	CodeNotFound            Code = "NOT_FOUND"
	CodeConflict            Code = "CONFLICT"
	CodeIdempotencyConflict Code = "IDEMPOTENCY_CONFLICT"
	CodeUnauthenticated     Code = "UNAUTHENTICATED"
	CodePermissionDenied    Code = "PERMISSION_DENIED"
	CodeRateLimited         Code = "RATE_LIMITED"
	CodeTimeout             Code = "TIMEOUT"
	CodeTooLarge            Code = "TOO_LARGE"
	CodeCancelled           Code = "CANCELLED"
	CodeUnavailable         Code = "UNAVAILABLE"
	CodeInternal            Code = "INTERNAL"
	// CodeInsufficientScope: the caller's OAuth access token does not
	// carry the scope the operation needs (reading, or starting and
	// cancelling runs).
	CodeInsufficientScope Code = "INSUFFICIENT_SCOPE"
	// CodeCallDepthExceeded: the call is deeper in a chain of Duet calls
	// (Duet-Call-Depth: a run's MCP call or http step reaching a Duet,
	// whose run calls a Duet, ...) than DUET_MAX_CALL_DEPTH allows: a
	// loop through one or more Duets is stopped there. Nothing was done.
	CodeCallDepthExceeded Code = "CALL_DEPTH_EXCEEDED"
	// CodeSchemaTooNew: the database's schema was migrated by a newer duet
	// than this one; this build does not know its tables and refuses it
	// (upgrade duet, or restore a backup to go back).
	CodeSchemaTooNew Code = "SCHEMA_TOO_NEW"
	// CodeLeaseLost: a worker wrote to a run it no longer holds (another
	// worker claimed it after the lease ran out, or it was handed back or
	// ended); the write was refused and the worker stops running the run.
	CodeLeaseLost Code = "LEASE_LOST"

	// Protocol codes: a request refused before it was understood.
	CodeParseError     Code = "PARSE_ERROR"     // the body is not valid JSON (RFC 7493: UTF-8, no duplicate keys)
	CodeInvalidRequest Code = "INVALID_REQUEST" // valid JSON, but not a request the protocol allows
	// CodeIdentityMismatch: a request names two different users (MCP-Lite's
	// SSO-Emp-Id header and body user.empId).
	CodeIdentityMismatch Code = "IDENTITY_MISMATCH"
	// CodeCapabilityRequired: the call needs a client capability the
	// client did not declare (MCP's "missing required client capability",
	// JSON-RPC -32021): the Tasks extension for a tool that runs only as a
	// task, for instance.
	CodeCapabilityRequired Code = "CAPABILITY_REQUIRED"
	// CodeMethodNotAllowed: the REST API serves the path, but not with
	// the request's method (HTTP 405, with the methods it serves in
	// Allow).
	CodeMethodNotAllowed Code = "METHOD_NOT_ALLOWED"

	// Test execution codes (step and case results).
	CodeAssertionFailed    Code = "ASSERTION_FAILED"
	CodeStepTimeout        Code = "STEP_TIMEOUT"
	CodeCaseTimeout        Code = "CASE_TIMEOUT"
	CodeHTTPRequestFailed  Code = "HTTP_REQUEST_FAILED"
	CodeBindingFailed      Code = "BINDING_FAILED"
	CodeBrowserUnavailable Code = "BROWSER_UNAVAILABLE"
	CodeBrowserError       Code = "BROWSER_ERROR"
	CodeElementNotFound    Code = "ELEMENT_NOT_FOUND"
	CodeInterrupted        Code = "INTERRUPTED"
	// CodeLoopLimit: a repeat or forEach step would have run more
	// iterations than its bound (max); it stopped there.
	CodeLoopLimit Code = "LOOP_LIMIT"
	// CodeSecretNotFound: a step reads ${secrets.NAME} and the run's
	// executor has no secret of that name (duet vault set NAME).
	CodeSecretNotFound Code = "SECRET_NOT_FOUND"
	// CodeSessionNotFound: a case starts from a browser session (session:
	// NAME) that no case of its run saved (saveSession: NAME) in time, or
	// that expired.
	CodeSessionNotFound Code = "SESSION_NOT_FOUND"
	// CodeHookFailed: a step of a hook (beforeAll, beforeEach, afterEach,
	// afterAll) failed; the message names the hook and the step.
	CodeHookFailed Code = "HOOK_FAILED"
	// CodeLocatorAmbiguous: a locator matched several elements where a
	// step acts on (or reads) one; the message lists what it matched.
	CodeLocatorAmbiguous Code = "LOCATOR_AMBIGUOUS"
	// CodeApprovalRequired: a step of a case someone else wrote (or a
	// post-run action) would call an MCP tool with the executor's
	// credentials, and the executor has not approved that version of the
	// case (of the actions) with the places it can send data to now.
	CodeApprovalRequired Code = "APPROVAL_REQUIRED"
	// CodeApprovalPending: an action that needs a person's approval (a
	// stop_test_run call the client could not confirm) waits for it; the
	// message names the request and how to approve it. Nothing was done.
	CodeApprovalPending Code = "APPROVAL_PENDING"
	// CodeApprovalExpired: the approval came (or was looked for) after the
	// request's time limit; nothing was done.
	CodeApprovalExpired Code = "APPROVAL_EXPIRED"
	// CodeApprovalDenied: the person asked declined; nothing was done.
	CodeApprovalDenied Code = "APPROVAL_DENIED"

	// Browser and device codes (remote browsers, phones).
	CodeBrowserProtocolMismatch   Code = "BROWSER_PROTOCOL_MISMATCH"   // the endpoint does not speak the DevTools protocol
	CodeBrowserVersionUnsupported Code = "BROWSER_VERSION_UNSUPPORTED" // the browser is older than Duet supports
	CodeDeviceLost                Code = "DEVICE_LOST"                 // the phone or remote browser went away mid-run

	// MCP client codes (calls Duet makes to other MCP servers).
	CodeMCPServerNotConfigured Code = "MCP_SERVER_NOT_CONFIGURED"
	CodeMCPToolNotFound        Code = "MCP_TOOL_NOT_FOUND"
	CodeMCPCallTimeout         Code = "MCP_CALL_TIMEOUT"
	CodeMCPAuthFailed          Code = "MCP_AUTH_FAILED"
	CodeMCPToolError           Code = "MCP_TOOL_ERROR"
	CodeMCPUnreachable         Code = "MCP_UNREACHABLE"
	CodeMCPProtocolMismatch    Code = "MCP_PROTOCOL_MISMATCH"
	CodeURLRefused             Code = "URL_REFUSED"
	// CodeMCPAuthIssuerMismatch: the server now names an authorization
	// server other than the one its pre-registered OAuth client is bound
	// to; Duet sent that server nothing.
	CodeMCPAuthIssuerMismatch Code = "MCP_AUTH_ISSUER_MISMATCH"

	// Agent codes.
	CodeLLMNotConfigured Code = "LLM_NOT_CONFIGURED"
	CodeLLMError         Code = "LLM_ERROR"
	CodeGenerationFailed Code = "GENERATION_FAILED"
	// CodeLLMBudgetExceeded: an AI step spent its token budget (its
	// maxTokens, or DUET_LLM_STEP_TOKENS) before the model answered what
	// it asked; no further call was made.
	CodeLLMBudgetExceeded Code = "LLM_BUDGET_EXCEEDED"

	// CodeFFmpegNotFound: exporting a trace's replay as a video needs
	// ffmpeg, and the instance has none (the replay in the viewer needs
	// nothing).
	CodeFFmpegNotFound Code = "FFMPEG_NOT_FOUND"
)

// Codes lists every code, in declaration order.
func Codes() []Code {
	return []Code{
		CodeInvalidArgument, CodeNotFound, CodeConflict, CodeIdempotencyConflict,
		CodeUnauthenticated, CodePermissionDenied, CodeRateLimited, CodeTimeout,
		CodeTooLarge, CodeCancelled, CodeUnavailable, CodeInternal,
		CodeParseError, CodeInvalidRequest, CodeIdentityMismatch, CodeCapabilityRequired,
		CodeAssertionFailed, CodeStepTimeout, CodeCaseTimeout, CodeHTTPRequestFailed,
		CodeBindingFailed, CodeBrowserUnavailable, CodeBrowserError, CodeElementNotFound,
		CodeLocatorAmbiguous, CodeInterrupted, CodeApprovalRequired,
		CodeApprovalPending, CodeApprovalExpired, CodeApprovalDenied,
		CodeBrowserProtocolMismatch, CodeBrowserVersionUnsupported, CodeDeviceLost,
		CodeMCPServerNotConfigured, CodeMCPToolNotFound, CodeMCPCallTimeout,
		CodeMCPAuthFailed, CodeMCPToolError, CodeMCPUnreachable, CodeMCPProtocolMismatch,
		CodeURLRefused, CodeMCPAuthIssuerMismatch,
		CodeLLMNotConfigured, CodeLLMError, CodeGenerationFailed, CodeLLMBudgetExceeded,
		CodeInsufficientScope, CodeCallDepthExceeded, CodeSchemaTooNew, CodeLeaseLost,
		CodeLoopLimit, CodeSecretNotFound, CodeHookFailed, CodeSessionNotFound,
		CodeMethodNotAllowed, CodeFFmpegNotFound,
	}
}

// Error is Duet's error type. Code and Message are safe to show to the caller;
// Op and Err are for logs and never leave the process.
type Error struct {
	Code    Code   // machine-readable code
	Message string // human-readable, safe to show to callers
	Op      string // logical operation, e.g. "sqlite.TaskStore.FindTaskByID"
	Err     error  // underlying error, if any
}

func (e *Error) Error() string {
	var s string
	if e.Op != "" {
		s = e.Op + ": "
	}
	s += string(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with code and message that wraps err.
func WrapError(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// CodeInternal for any other non-nil error, or "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the caller-safe message of the first *Error in err's
// chain, or "internal error" for any other non-nil error.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		if e.Message == "" {
			return string(e.Code)
		}
		return e.Message
	}
	return "internal error"
}
