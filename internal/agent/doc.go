// Package agent is Duet's test agent: it writes a test case for a task with
// an LLM that calls tools, and hands the case to the deterministic compiler.
//
// One ToolRegistry holds what the model may call during a generation: the
// platform's read tools (the task, its existing cases, the page under test,
// the user's skills and prompts), the read-only tools of the MCP servers the
// user registered, wrapped by a thin adapter whose calls go through the one
// duet.Invoker as the user with source "agent", and submit_case. Each
// request declares a bounded set of them (at most 128 tools and
// Options.MaxToolBytes of definitions: the relevant MCP tools first, and
// find_tools to search the rest). What a tool returns is data: screened
// like a description (package scan), marked with its server, and kept
// from reaching another server's tools during the generation unless the
// user allowed that pair (Request.AllowFlows). The loop is
// bounded (turns, tokens, wall clock); a draft that does not compile goes
// back to the model with the compiler's errors at most Options.MaxRepairs
// times; a valid case is saved as a draft, and every generation leaves a
// record of its turns, tokens, attempts and outcome.
//
// The model never sees a credential: MCP servers reach it as names,
// descriptions and schemas, and their results have secret-looking values
// masked. Prompts offers the same brief to a client's own model as MCP
// prompts.
package agent
