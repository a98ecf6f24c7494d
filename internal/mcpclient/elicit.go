package mcpclient

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitDefaults answers a server's elicitation/create the only way an
// unattended test run can: a form whose every required field has a default
// (SEP-1034) is accepted with those defaults; any other request, and every
// URL-mode request, is declined. Nobody is asked anything in the middle of a
// test run.
func elicitDefaults(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	decline := &mcp.ElicitResult{Action: "decline"}
	if req.Params == nil || req.Params.Mode == "url" || req.Params.RequestedSchema == nil {
		return decline, nil
	}
	raw, err := json.Marshal(req.Params.RequestedSchema)
	if err != nil {
		return decline, nil
	}
	var schema struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &schema) != nil {
		return decline, nil
	}
	content := map[string]any{}
	for name, p := range schema.Properties {
		if len(p.Default) == 0 || string(p.Default) == "null" {
			continue
		}
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			content[name] = v
		}
	}
	for _, name := range schema.Required {
		if _, ok := content[name]; !ok {
			return decline, nil
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}
