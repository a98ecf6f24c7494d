package httpapi

import (
	"net/http"

	"github.com/duet-test/duet"
)

// codeRow maps a code to its HTTP status and JSON-RPC error code.
type codeRow struct {
	status int
	rpc    int
}

// codes is the one table from error codes to wire statuses. A test checks
// that every duet code has a row.
var codes = map[duet.Code]codeRow{
	duet.CodeInvalidArgument:        {http.StatusBadRequest, -32602},
	duet.CodeNotFound:               {http.StatusNotFound, -32004},
	duet.CodeConflict:               {http.StatusConflict, -32009},
	duet.CodeIdempotencyConflict:    {http.StatusConflict, -32009},
	duet.CodeUnauthenticated:        {http.StatusUnauthorized, -32001},
	duet.CodePermissionDenied:       {http.StatusForbidden, -32003},
	duet.CodeInsufficientScope:      {http.StatusForbidden, -32003},
	duet.CodeRateLimited:            {http.StatusTooManyRequests, -32029},
	duet.CodeCallDepthExceeded:      {http.StatusLoopDetected, -32000},
	duet.CodeTimeout:                {http.StatusGatewayTimeout, -32008},
	duet.CodeTooLarge:               {http.StatusRequestEntityTooLarge, -32013},
	duet.CodeCancelled:              {499, -32800},
	duet.CodeUnavailable:            {http.StatusServiceUnavailable, -32603},
	duet.CodeInternal:               {http.StatusInternalServerError, -32603},
	duet.CodeParseError:             {http.StatusBadRequest, -32700},
	duet.CodeInvalidRequest:         {http.StatusBadRequest, -32600},
	duet.CodeIdentityMismatch:       {http.StatusBadRequest, -32600},
	duet.CodeCapabilityRequired:     {http.StatusBadRequest, -32021},
	duet.CodeMethodNotAllowed:       {http.StatusMethodNotAllowed, -32601},
	duet.CodeAssertionFailed:        {http.StatusUnprocessableEntity, -32000},
	duet.CodeStepTimeout:            {http.StatusGatewayTimeout, -32008},
	duet.CodeCaseTimeout:            {http.StatusGatewayTimeout, -32008},
	duet.CodeHTTPRequestFailed:      {http.StatusBadGateway, -32000},
	duet.CodeBindingFailed:          {http.StatusUnprocessableEntity, -32000},
	duet.CodeBrowserUnavailable:     {http.StatusServiceUnavailable, -32603},
	duet.CodeBrowserError:           {http.StatusBadGateway, -32000},
	duet.CodeElementNotFound:        {http.StatusUnprocessableEntity, -32000},
	duet.CodeLocatorAmbiguous:       {http.StatusUnprocessableEntity, -32000},
	duet.CodeInterrupted:            {http.StatusServiceUnavailable, -32603},
	duet.CodeLoopLimit:              {http.StatusUnprocessableEntity, -32000},
	duet.CodeSecretNotFound:         {http.StatusUnprocessableEntity, -32000},
	duet.CodeSessionNotFound:        {http.StatusUnprocessableEntity, -32000},
	duet.CodeHookFailed:             {http.StatusUnprocessableEntity, -32000},
	duet.CodeApprovalRequired:       {http.StatusForbidden, -32003},
	duet.CodeApprovalPending:        {http.StatusForbidden, -32003},
	duet.CodeApprovalExpired:        {http.StatusGone, -32003},
	duet.CodeApprovalDenied:         {http.StatusForbidden, -32003},
	duet.CodeMCPServerNotConfigured: {http.StatusFailedDependency, -32000},
	duet.CodeMCPToolNotFound:        {http.StatusNotFound, -32004},
	duet.CodeMCPCallTimeout:         {http.StatusGatewayTimeout, -32008},
	duet.CodeMCPAuthFailed:          {http.StatusBadGateway, -32000},
	duet.CodeMCPToolError:           {http.StatusBadGateway, -32000},
	duet.CodeMCPUnreachable:         {http.StatusBadGateway, -32000},
	duet.CodeMCPProtocolMismatch:    {http.StatusBadGateway, -32000},
	duet.CodeURLRefused:             {http.StatusBadRequest, -32602},
	duet.CodeMCPAuthIssuerMismatch:  {http.StatusBadGateway, -32000},
	duet.CodeLLMNotConfigured:       {http.StatusServiceUnavailable, -32603},
	duet.CodeFFmpegNotFound:         {http.StatusNotImplemented, -32603},
	duet.CodeLLMError:               {http.StatusBadGateway, -32000},
	duet.CodeGenerationFailed:       {http.StatusUnprocessableEntity, -32000},
	duet.CodeLLMBudgetExceeded:      {http.StatusUnprocessableEntity, -32000},

	// Remote browsers and devices.
	duet.CodeBrowserProtocolMismatch:   {http.StatusBadGateway, -32000},
	duet.CodeBrowserVersionUnsupported: {http.StatusBadGateway, -32000},
	duet.CodeDeviceLost:                {http.StatusServiceUnavailable, -32603},

	// The database and the run queue.
	duet.CodeSchemaTooNew: {http.StatusServiceUnavailable, -32603},
	duet.CodeLeaseLost:    {http.StatusConflict, -32009},
}

// StatusOf returns the HTTP status for an error code.
func StatusOf(c duet.Code) int {
	if r, ok := codes[c]; ok {
		return r.status
	}
	return http.StatusInternalServerError
}

// RPCCodeOf returns the JSON-RPC error code for an error code.
func RPCCodeOf(c duet.Code) int {
	if r, ok := codes[c]; ok {
		return r.rpc
	}
	return -32603
}

// Codes is the table as the transports take it (mcpserver.Options.Codes,
// lite.Options.Codes): they translate codes through it and repeat no number.
var Codes codeTable

type codeTable struct{}

// Status returns the HTTP status of code.
func (codeTable) Status(c duet.Code) int { return StatusOf(c) }

// RPCCode returns the JSON-RPC error code of code.
func (codeTable) RPCCode(c duet.Code) int { return RPCCodeOf(c) }
