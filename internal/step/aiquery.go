package step

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
)

// StepAIQuery is the name of the aiQuery kind.
const StepAIQuery duet.StepKind = "aiQuery"

// aiQueryRounds is how many times aiQuery asks for an answer that
// validates: a second time with the first answer's error.
const aiQueryRounds = 2

// aiQueryAnswer bounds the tokens of one aiQuery answer.
const aiQueryAnswer = 4096

var aiQueryForm = Form{
	Keys: []Key{
		{Name: "want", Type: Template, Required: true, Doc: "what to read from the page, in words"},
		{Name: "schema", Type: Any, Doc: "the JSON Schema the answer must validate against (default: a string)"},
		{Name: "as", Type: Ident, Doc: "the variable to save the answer to"},
		{Name: "saveAs", Type: Ident, Doc: "the same as as"},
		aiBudgetKey,
	},
	AtLeastOne: []string{"as", "saveAs"},
}

// AIQuery is the aiQuery step.
var AIQuery = register(aiKind(&Kind{
	Name:    StepAIQuery,
	Order:   405,
	Summary: "Ask the configured model to read something from the page into a variable; the answer must validate against the step's JSON Schema.",
	Form:    aiQueryForm,
	Example: "- aiQuery:\n    want: the items of the order with their name and quantity\n    as: items\n" +
		"    schema: {type: array, items: {type: object, required: [name, qty], properties: {name: {type: string}, qty: {type: integer}}}}\n" +
		"- aiQuery: {want: the order's status, as: status, schema: {enum: [pending, paid, shipped, cancelled]}}\n",
	Doc: "The answer is validated against `schema`; one that does not validate is sent back to the model once " +
		"with the error, and a second miss fails the step with LLM_ERROR. The value is then a variable like any " +
		"other (`${items[0].name}`).",
	Agent: "`aiQuery: {want: the list of products with name and price, as: items, schema: {type: array, ...}}` (a model reads the page at run time; prefer extract)",
	Run: withAI(func(ctx context.Context, env Env, st *duet.Step, a *aiRun, want string) (string, any, error) {
		raw := st.AI.Schema
		if len(raw) == 0 {
			raw = json.RawMessage(`{"type":"string"}`)
		}
		rs, err := resolveSchema(raw)
		if err != nil {
			return "", nil, duet.Errorf(duet.CodeInvalidArgument, "aiQuery: schema: %v", err)
		}
		page, err := a.look(ctx)
		if err != nil {
			return "", nil, err
		}
		format := fmt.Sprintf(`{"answer": VALUE}, where VALUE is what was asked, valid against this JSON Schema: %s`, raw)
		msgs := messages(page, "Read from the page: "+env.Secrets().Scrub(want), format)
		for round := 1; ; round++ {
			ans, err := a.ask(ctx, msgs, aiQueryAnswer)
			if err != nil {
				return "", nil, err
			}
			var out struct {
				Answer *any `json:"answer"`
			}
			err = decodeAnswer(st.Kind, ans, &out)
			if err == nil && out.Answer == nil {
				err = duet.Errorf(duet.CodeLLMError, "aiQuery: the model's answer has no answer")
			}
			if err == nil {
				if verr := rs.Validate(*out.Answer); verr != nil {
					err = duet.Errorf(duet.CodeLLMError, "aiQuery: the model's answer does not validate against the schema: %v", verr)
				} else {
					return st.AI.SaveAs, *out.Answer, nil
				}
			}
			if round == aiQueryRounds {
				return "", nil, err
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: ans},
				llm.Message{Role: llm.RoleUser, Content: duet.ErrorMessage(err) + "\nAnswer again with one JSON object, exactly: " + format})
		}
	}),
}, false, "want, as, schema", compileAIQuery))

// compileAIQuery reads the keys of aiQuery but its prompt.
func compileAIQuery(c *Compiler, n *Node, ai *duet.AIStep) {
	if s := n.Get("schema"); s != nil {
		raw, err := json.Marshal(s.Plain())
		if err == nil {
			_, err = resolveSchema(raw)
		}
		if err != nil {
			c.Errf(s, "schema: %v", err)
		}
		ai.Schema = compactJSON(raw)
	}
	ai.SaveAs = c.saveAsKey(n, "aiQuery needs as: (the variable to save the answer to)")
}

// resolveSchema reads a JSON Schema and resolves it (its references, its
// keywords) for validation.
func resolveSchema(raw []byte) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}
