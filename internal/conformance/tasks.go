package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// Fixtures of the tasks-* scenarios (the Tasks extension, SEP-2663): tools
// that go async through the catalog's task support (catalog.Env.Async), as
// start_test_run does through its run.

// Tool names of the tasks-* scenarios.
const (
	ToolGreet            = "greet"
	ToolSlowCompute      = "slow_compute"
	ToolFailingJob       = "failing_job"
	ToolProtocolErrorJob = "protocol_error_job"
	ToolConfirmDelete    = "confirm_delete"
	ToolMultiInput       = "multi_input"
	ToolWithTask         = "test_tool_with_task"
)

func taskTools() []*catalog.Tool {
	return []*catalog.Tool{
		catalog.Define(ToolGreet, "", "Greets by name, at once: never a task (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, in struct {
				Name string `json:"name,omitempty" jsonschema:"who to greet"`
			}) (TextOut, error) {
				return text("Hello, " + in.Name + "!")
			}),
		catalog.Define(ToolSlowCompute, "", "Sleeps seconds, then answers; a task for a client with the Tasks extension (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, in struct {
				Seconds float64 `json:"seconds,omitempty" jsonschema:"how long to work"`
				Label   string  `json:"label,omitempty" jsonschema:"echoed in the result"`
			}) (TextOut, error) {
				return TextOut{}, env.Async(func(ctx context.Context, env *catalog.Env) (catalog.Texter, error) {
					if err := pause(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
						return nil, err
					}
					return TextOut{Message: fmt.Sprintf("computed %s after %gs", in.Label, in.Seconds)}, nil
				})
			}).WithTasks(catalog.TaskOptional),
		catalog.Define(ToolFailingJob, "", "Runs only as a task, and fails after a second: a tool error (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				return TextOut{}, env.Async(func(ctx context.Context, env *catalog.Env) (catalog.Texter, error) {
					if err := pause(ctx, time.Second); err != nil {
						return nil, err
					}
					return nil, duet.Errorf(duet.CodeInvalidArgument, "the job failed, as it always does")
				})
			}).WithTasks(catalog.TaskRequired),
		catalog.Define(ToolProtocolErrorJob, "", "A task whose work panics: a protocol-level failure (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				return TextOut{}, env.Async(func(ctx context.Context, env *catalog.Env) (catalog.Texter, error) {
					panic("protocol_error_job always panics")
				})
			}).WithTasks(catalog.TaskOptional),
		catalog.Define(ToolConfirmDelete, "", "A task that asks for a confirmation before it answers (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, in struct {
				Filename string `json:"filename,omitempty" jsonschema:"the file to delete"`
			}) (TextOut, error) {
				return TextOut{}, env.Async(func(ctx context.Context, env *catalog.Env) (catalog.Texter, error) {
					var e catalog.Elicitation
					if !env.Answer("confirm", &e) {
						return nil, env.Ask(map[string]catalog.InputRequest{"confirm": elicitField("Delete "+in.Filename+"?", "confirm", "boolean")}, nil)
					}
					if ok, _ := e.Content["confirm"].(bool); e.Action == "accept" && ok {
						return TextOut{Message: "Deleted " + in.Filename}, nil
					}
					return TextOut{Message: "Kept " + in.Filename}, nil
				})
			}).WithTasks(catalog.TaskOptional).WithInput(),
		catalog.Define(ToolMultiInput, "", "A task that asks two questions at once (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				return TextOut{}, env.Async(func(ctx context.Context, env *catalog.Env) (catalog.Texter, error) {
					name, _ := accepted(env, "name")["name"].(string)
					color, _ := accepted(env, "color")["color"].(string)
					if !env.Answered() {
						return nil, env.Ask(map[string]catalog.InputRequest{
							"name":  elicitName("What is your name?"),
							"color": elicitField("What is your favorite color?", "color", "string"),
						}, nil)
					}
					return TextOut{Message: fmt.Sprintf("%s likes %s", name, color)}, nil
				})
			}).WithTasks(catalog.TaskOptional).WithInput(),
		catalog.Define(ToolWithTask, "", "Asks the caller's name in the call, then works as a task (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				name, _ := accepted(env, "user_name")["name"].(string)
				if name == "" {
					return TextOut{}, env.Ask(map[string]catalog.InputRequest{"user_name": elicitName("What is your name?")}, nil)
				}
				return TextOut{}, env.Async(func(ctx context.Context, env *catalog.Env) (catalog.Texter, error) {
					return TextOut{Message: "Hello, " + name + ", from a task"}, nil
				})
			}).WithTasks(catalog.TaskRequired).WithInput(),
	}
}
