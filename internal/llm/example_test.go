package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
)

// ExampleClient_Chat shows a tool-calling loop with usage accounting. It is
// compiled but not run, as it needs a real endpoint.
func ExampleClient_Chat() {
	cfg, err := llm.ConfigFromEnv(os.Getenv)
	if duet.ErrorCode(err) == duet.CodeLLMNotConfigured {
		fmt.Println(duet.ErrorMessage(err)) // names the variables to set
		return
	} else if err != nil {
		log.Fatal(err)
	}
	client, err := llm.New(cfg)
	if err != nil {
		log.Fatal(err)
	}

	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You write test cases."},
			{Role: llm.RoleUser, Content: "Test the checkout of order 42."},
		},
		Tools: []llm.Tool{{Function: llm.FunctionDef{
			Name:        "get_order",
			Description: "Returns an order by id.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		}}},
	}
	var usage llm.Usage // this generation's tokens
	attempts := 0
	for range 10 {
		resp, err := client.Chat(context.Background(), req)
		if err != nil {
			log.Fatal(err) // RATE_LIMITED, TIMEOUT, CANCELLED or LLM_ERROR
		}
		usage, attempts = usage.Add(resp.Usage), attempts+resp.Attempts
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println(msg.Content)
			break
		}
		req.Messages = append(req.Messages, msg)
		for _, call := range msg.ToolCalls {
			result := `{"id":"42","status":"paid"}` // run call.Function here
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: result})
		}
	}
	fmt.Printf("%d tokens in %d requests\n", usage.TotalTokens, attempts)
}
