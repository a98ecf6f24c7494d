package compiler

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
)

// The keys of a suite file above its steps, as data: what the compiler
// allows (in this order in its messages) and what the JSON Schema of the
// format says. The steps' keys are their kinds' (internal/step).
var (
	suiteKeys = []step.Key{
		{Name: "task", Type: ref("task"), Required: true, Doc: "the task the cases belong to"},
		{Name: "flows", Type: step.MapOf(ref("flow")), Doc: "reusable flows the steps run with use: name → {params, steps}"},
		{Name: "cases", Type: listOf(ref("case")), Required: true, Doc: "the task's cases; a case no longer in the file is archived"},
	}
	taskKeys = []step.Key{
		{Name: "name", Type: step.Text, Required: true, Doc: "unique per owner; one line of at most 100 characters"},
		{Name: "description", Type: step.Text},
		{Name: "baseURL", Type: step.Text, Doc: "an absolute http(s) URL; relative URLs in steps resolve against it"},
		{Name: "baseUrl", Type: step.Text, Doc: "the same as baseURL"},
		{Name: "device", Type: step.Text, Doc: "the device preset browser steps run on (desktop, iphone-15, pixel-7, ipad, android:SERIAL; docs/devices.md)"},
		{Name: "browser", Type: step.Text, Doc: "a remote browser's DevTools endpoint the task's browser steps run in (docs/devices.md)"},
		{Name: "sharedWith", Type: listOf(step.Text), Doc: "users who may see and run the task (omit to leave sharing alone)"},
		{Name: "postRun", Type: postRunList, Doc: "MCP tool calls made when a run of the task ends"},
		{Name: "environments", Type: step.MapOf(ref("environment")), Doc: "the places the task runs against, by name: each replaces baseURL and gives variables env.NAME; a run names one (duet run --env NAME)"},
		{Name: "defaultEnvironment", Type: step.Text, Doc: "the environment a run that names none runs in"},
		{Name: duet.HookBeforeAll, Type: step.Steps, Doc: "steps run once per run, before its first case; if they fail, no case runs"},
		{Name: duet.HookBeforeEach, Type: step.Steps, Doc: "steps run before each case's own"},
		{Name: duet.HookAfterEach, Type: step.Steps, Doc: "steps run after each case's own, whatever became of them (failed, timed out, cancelled)"},
		{Name: duet.HookAfterAll, Type: step.Steps, Doc: "steps run once per run, after its last case, whatever became of the cases"},
		{Name: "trace", Type: step.Enum("off", "on-failure", "on-first-retry", "on"), Doc: "when a case keeps a trace (screenshots, DOM, console, network, replay): default DUET_TRACE, on-failure"},
		{Name: "testIdAttribute", Type: step.Text, Doc: "the attribute testId locators name (default data-testid), for the suite's cases"},
		{Name: "schedule", Type: scheduleType, Doc: "when the task runs by itself: one schedule or a list (docs/schedules.md)"},
		{Name: "retries", Type: step.Int, Doc: fmt.Sprintf("how many times a failed case runs again from its start, 0 to %d (within DUET_MAX_RETRIES); a case that fails and then passes is flaky. A case's own retries: wins", MaxRetries)},
		{Name: "timeout", Type: step.Duration, Doc: fmt.Sprintf("the time limit of each case that sets none, at most %s (default DUET_CASE_TIMEOUT)", maxCaseTimeout)},
		{Name: "tags", Type: tagList, Doc: "tags every case of the task has, besides its own"},
		{Name: "parallel", Type: step.Int, Doc: fmt.Sprintf("how many of the task's cases a run executes at once, 1 to %d within DUET_MAX_PARALLEL (default DUET_PARALLEL)", MaxParallel)},
	}
	scheduleKeys = []step.Key{
		{Name: "name", Type: step.Text, Doc: "unique within the task (default: made from the timing)"},
		{Name: "cron", Type: step.Text, Doc: "a cron expression (5 fields, or @daily, @hourly, ...); give cron or every"},
		{Name: "timeZone", Type: step.Text, Doc: "the IANA time zone of cron (default UTC)"},
		{Name: "every", Type: step.Text, Doc: "an interval such as 15m or 1h, instead of cron"},
		{Name: "missed", Type: step.Enum(string(duet.MissedSkip), string(duet.MissedRunOnce)), Doc: "a slot missed while no instance ran: skip (the default) or runOnce"},
		{Name: "overlap", Type: step.Enum(string(duet.OverlapSkip), string(duet.OverlapQueue)), Doc: "a slot that comes while the previous run is unfinished: skip (the default) or queue"},
		{Name: "tags", Type: tagList, Doc: "run only the cases with any of these tags (default: all)"},
	}
	scheduleType = step.TypeOf("schedule or list of schedules", func(bool) *jsonschema.Schema {
		one := &jsonschema.Schema{Ref: "#/$defs/schedule"}
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{one, {Type: "array", MaxItems: ptr(maxSchedules), Items: &jsonschema.Schema{Ref: "#/$defs/schedule"}}, {Type: "null"}}}
	})
	environmentKeys = []step.Key{
		{Name: "baseURL", Type: step.Text, Doc: "an absolute http(s) URL that replaces the task's"},
		{Name: "baseUrl", Type: step.Text, Doc: "the same as baseURL"},
		{Name: "vars", Type: step.MapOf(step.Any), Doc: "values the steps read as env.NAME (never a secret: those are ${secrets.NAME})"},
	}
	flowKeys = []step.Key{
		{Name: "description", Type: step.Text, Doc: "what the flow does"},
		{Name: "params", Type: flowParams, Doc: "its parameters: a list of names (each required), or name: default (null: required)"},
		{Name: "steps", Type: step.Steps, Required: true, Doc: "the flow's steps; they see its parameters, not the caller's variables"},
	}
	flowParams = step.TypeOf("parameters", func(bool) *jsonschema.Schema {
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
			{Type: "array", Items: &jsonschema.Schema{Ref: "#/$defs/variable"}},
			{Type: "object", PropertyNames: &jsonschema.Schema{Ref: "#/$defs/variable"}},
			{Type: "null"},
		}}
	})
	caseKeys = []step.Key{
		{Name: "key", Type: step.Text, Doc: "stable name within the task: lower-case letters, digits, '.', '_' or '-' (default: a slug of the title)"},
		{Name: "title", Type: step.Text, Required: true, Doc: "what the case proves, in one line"},
		{Name: "steps", Type: step.Steps, Required: true, Doc: "run in order"},
		{Name: "timeout", Type: step.Duration, Doc: fmt.Sprintf("the whole case's time limit, at most %s (default DUET_CASE_TIMEOUT)", maxCaseTimeout)},
		{Name: "each", Type: eachType, Doc: fmt.Sprintf("data: a case of each row (at most %d), named from it (${row.NAME} in the title); rows inline, or {file: PATH} of a .csv or .json file beside the suite", MaxEachRows)},
		{Name: duet.HookBeforeEach, Type: step.Steps, Doc: "steps run before this case's own (after the task's beforeEach)"},
		{Name: duet.HookAfterEach, Type: step.Steps, Doc: "steps run after this case's own, whatever became of them (before the task's afterEach)"},
		{Name: "session", Type: step.Text, Doc: "start from the browser session an earlier case of the run saved (saveSession: NAME): signed in (a session step runs first)"},
		{Name: "retries", Type: step.Int, Doc: fmt.Sprintf("how many times the case runs again from its start when it fails, 0 to %d (default: the task's)", MaxRetries)},
		{Name: "tags", Type: tagList, Doc: "the case's tags (besides its task's): a run may select cases by tag"},
	}
	tagList = step.TypeOf("tag or list of tags", func(bool) *jsonschema.Schema {
		tag := &jsonschema.Schema{Type: "string", Pattern: tagRe().String()}
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{tag, {Type: "array", MaxItems: ptr(maxTags), Items: tag}}}
	})
	eachType = step.TypeOf("rows or {file}", func(bool) *jsonschema.Schema {
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
			{Type: "array", MinItems: ptr(1), MaxItems: ptr(MaxEachRows), Items: &jsonschema.Schema{Type: "object", MinProperties: ptr(1)}},
			{Type: "object", Properties: map[string]*jsonschema.Schema{"file": {Type: "string", Description: "a .csv (a header line, then rows) or .json (a list of objects) file of the suite's folder"}},
				Required: []string{"file"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}},
		}}
	})
	postRunKeys = []step.Key{
		{Name: "name", Type: step.Text, Doc: "shown in the run's result and report (default: SERVER/TOOL)"},
		{Name: "on", Type: step.Enum("failure", "success", "always"), Required: true, Doc: "failure (failed or error), success (passed) or always (also cancelled)"},
		{Name: "server", Type: step.Text, Doc: "the name of a server you registered"},
		{Name: "serverKey", Type: step.Text, Doc: "the serverKey of a server you registered, instead of server"},
		{Name: "tool", Type: step.Text, Doc: "the tool's name"},
		{Name: "toolName", Type: step.Text, Doc: "the same as tool"},
		{Name: "input", Type: step.Bindings, Doc: "bindings over the run's summary (task, run)"},
		{Name: "inputBindings", Type: step.Bindings, Doc: "the same as input"},
	}
	postRunList = step.TypeOf("list of post-run actions", func(bool) *jsonschema.Schema {
		return &jsonschema.Schema{Types: []string{"array", "null"}, MaxItems: ptr(maxPostRun), Items: &jsonschema.Schema{Ref: "#/$defs/postRunAction"}}
	})
)

// maxCaseTimeout bounds the timeout of a case.
const maxCaseTimeout = 24 * time.Hour

func ref(name string) step.Type {
	return step.TypeOf(name, func(bool) *jsonschema.Schema { return &jsonschema.Schema{Ref: "#/$defs/" + name} })
}

func listOf(t step.Type) step.Type {
	return step.TypeOf("list of "+t.Name, func(bool) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", Items: t.Schema(false)}
	})
}

func ptr[T any](v T) *T { return &v }

func keyNames(keys []step.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Name
	}
	return out
}

// SuiteSchema returns the JSON Schema (draft 2020-12) of a suite file,
// generated from the compiler's keys and the step registry: editors (the
// YAML language server in VS Code, JetBrains) complete and check suites
// with it. Every suite the compiler accepts is valid against it; the
// compiler checks more (expressions, variables, URLs, servers), with
// line:col errors.
func SuiteSchema() *jsonschema.Schema {
	defs := step.Definitions()
	defs["task"] = step.Mapping(taskKeys)
	defs["task"].Description = "the task: its name, base URL, device, sharing and post-run actions"
	defs["case"] = step.Mapping(caseKeys)
	defs["case"].Description = "a case: a title and steps"
	defs["environment"] = step.Mapping(environmentKeys)
	defs["environment"].Types, defs["environment"].Type = []string{"object", "null"}, ""
	defs["environment"].Description = "an environment: a base URL and variables"
	defs["flow"] = step.Mapping(flowKeys)
	defs["flow"].Description = "a reusable flow: parameters and steps (use: NAME)"
	defs["postRunAction"] = step.Mapping(postRunKeys)
	defs["postRunAction"].Description = "an MCP tool call made when a run ends"
	defs["postRunAction"].AnyOf = []*jsonschema.Schema{{Required: []string{"server"}}, {Required: []string{"serverKey"}}}
	defs["schedule"] = step.Mapping(scheduleKeys)
	defs["schedule"].Description = "a schedule: cron in a time zone, or every; the missed and overlap policies"
	s := step.Mapping(suiteKeys)
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.Title = "Duet suite"
	s.Description = "A suite file: one task and its cases (docs/suite-format.md)."
	s.Defs = defs
	return s
}

// SuiteSchemaJSON returns SuiteSchema as indented JSON, with a final
// newline: what `duet schema suite` prints and docs/suite.schema.json holds.
func SuiteSchemaJSON() []byte {
	b, err := json.MarshalIndent(SuiteSchema(), "", "  ")
	if err != nil {
		panic(fmt.Sprintf("compiler: the suite schema does not marshal: %v", err))
	}
	return append(b, '\n')
}
