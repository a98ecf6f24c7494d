package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver/fast"
)

// The Tasks extension (SEP-2663) over MCP: the catalog decides when a call
// becomes a task (catalog/task.go); this file puts it on the wire. A
// tools/call that created a task answers with a CreateTaskResult (the task's
// fields at the top level, resultType "task"), whatever the transport: the
// governing middleware replaces the handler's placeholder with it. tasks/get,
// tasks/update and tasks/cancel are methods of their own, served to clients
// that declared the extension (others get -32021) and governed like every
// other method. tasks/result and tasks/list do not exist in this version of
// the extension: -32601.

// createTaskResult is the answer of a tools/call that created a task.
type createTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskFields
}

// taskFields are the fields of a task on the wire.
type taskFields struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs"`
}

// detailedTask is the answer of tasks/get.
type detailedTask struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskFields
	Result        *finalResult        `json:"result,omitempty"`
	Error         *jsonrpc.Error      `json:"error,omitempty"`
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
}

// finalResult is the tool result a finished task inlines in tasks/get: a
// complete CallToolResult, marked final with resultType "complete" as the
// Tasks extension's DetailedTask requires (the SDK marks a tools/call
// result so only on its own path, for a 2026-07-28 client; this result
// never goes through it).
type finalResult struct{ r *mcp.CallToolResult }

// MarshalJSON writes the result as the SDK marshals it, with
// "resultType":"complete" last (fast.MarshalComplete).
func (f *finalResult) MarshalJSON() ([]byte, error) { return fast.MarshalComplete(f.r) }

// ackResult is the empty answer of tasks/update and tasks/cancel.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskParams are the parameters of tasks/get, tasks/update, tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

func wireTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func fieldsOf(v *catalog.MCPTask) taskFields {
	return taskFields{TaskID: v.ID, Status: v.Status, StatusMessage: v.Message, CreatedAt: wireTime(v.CreatedAt),
		LastUpdatedAt: wireTime(v.LastUpdatedAt), TTLMs: v.TTL.Milliseconds(), PollIntervalMs: v.PollInterval.Milliseconds()}
}

// taskHolder carries a created task from the tool handler to govern, and
// whether the handler ran (catalog.Call audited the call).
type taskHolder struct {
	task *catalog.MCPTask
	ran  bool
}

type taskHolderKey struct{}

// tasksDeclared reports whether the client declared the Tasks extension:
// in the request's _meta (2026-07-28) or at initialize (a session).
func tasksDeclared(meta map[string]any, ss *mcp.ServerSession) bool {
	if caps, ok := meta[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
		if ext, ok := caps["extensions"].(map[string]any); ok {
			if _, ok := ext[catalog.TasksExtension]; ok {
				return true
			}
		}
	}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.Capabilities != nil {
			_, ok := p.Capabilities.Extensions[catalog.TasksExtension]
			return ok
		}
	}
	return false
}

// addTasks registers the tasks/* methods on the SDK server.
func (s *Server) addTasks() {
	type handler func(ctx context.Context, caller duet.Caller, p *taskParams) (mcp.Result, error)
	method := func(name string, h handler) {
		err := mcp.AddReceivingCustomMethod(s.srv, name, func(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
			if p == nil {
				p = &taskParams{}
			}
			if !tasksDeclared(p.Meta, ss) {
				data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
					"extensions": map[string]any{catalog.TasksExtension: map[string]any{}}}})
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
					Message: "CAPABILITY_REQUIRED: " + name + " needs the " + catalog.TasksExtension + " extension", Data: data}
			}
			if p.TaskID == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "INVALID_ARGUMENT: taskId is required"}
			}
			res, err := h(ctx, callerOf(ctx, p.Meta), p)
			if err != nil {
				return nil, s.taskError(err)
			}
			return res, nil
		})
		if err != nil {
			panic(err)
		}
	}
	method("tasks/get", func(ctx context.Context, caller duet.Caller, p *taskParams) (mcp.Result, error) {
		v, err := s.cat.GetTask(ctx, caller, p.TaskID)
		if err != nil {
			return nil, err
		}
		out := &detailedTask{ResultType: "complete", taskFields: fieldsOf(v)}
		if v.Result != nil {
			out.Result = &finalResult{ToolResult(v.Result, caller.TraceID)}
		}
		if v.Error != nil {
			out.Error = &jsonrpc.Error{Code: int64(s.codes.RPCCode(v.Error.Code)), Message: string(v.Error.Code) + ": " + v.Error.Message}
		}
		if len(v.InputRequests) > 0 {
			if out.InputRequests, err = inputRequests(v.InputRequests); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	method("tasks/update", func(ctx context.Context, caller duet.Caller, p *taskParams) (mcp.Result, error) {
		if err := s.cat.UpdateTask(ctx, caller, p.TaskID, p.InputResponses); err != nil {
			return nil, err
		}
		return &ackResult{ResultType: "complete"}, nil
	})
	method("tasks/cancel", func(ctx context.Context, caller duet.Caller, p *taskParams) (mcp.Result, error) {
		if err := s.cat.CancelTask(ctx, caller, p.TaskID); err != nil {
			return nil, err
		}
		return &ackResult{ResultType: "complete"}, nil
	})
}

// taskError is the JSON-RPC error of a tasks/* failure: an unknown task
// (or someone else's) and bad arguments are -32602, as the extension says.
func (s *Server) taskError(err error) error {
	switch duet.ErrorCode(err) {
	case duet.CodeNotFound, duet.CodeInvalidArgument:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: string(duet.ErrorCode(err)) + ": " + duet.ErrorMessage(err)}
	}
	var jerr *jsonrpc.Error
	if errors.As(err, &jerr) {
		return jerr
	}
	return s.rpcError(err)
}

// taskMethods are the methods whose Mcp-Name header names the task.
var taskMethods = []string{"tasks/get", "tasks/update", "tasks/cancel"}

// checkTaskHeaders is the SEP-2243 check of a tasks/* request of the
// 2026-07-28 revision, which the SDK does not know: Mcp-Name must be the
// taskId of the body. It returns false after answering -32020.
func checkTaskHeaders(w http.ResponseWriter, r *http.Request, req *fast.Request) bool {
	if req == nil || !slices.Contains(taskMethods, req.Method) || r.Header.Get("Mcp-Protocol-Version") < statelessRevision {
		return true
	}
	if r.Header.Get("Mcp-Name") == req.TaskID {
		return true
	}
	WriteJSONRPCError(w, http.StatusBadRequest, mcp.CodeHeaderMismatch, "header mismatch: Mcp-Name must be the taskId of the request", fast.RawID(req.ID))
	return false
}
