// The whole journey of an outside MCP client, with the official TypeScript
// SDK over stdio: list → get → start_test_run → poll get_test_run until the
// run ends → get_execution_result. Used by test/e2e.
//
//   node sdk-flow.mjs '{"command": "/path/duet", "args": ["mcp"], "env": {...}, "cwd": "/"}'
//
// Prints {"tasks", "runId", "replayedRunId", "run", "executions"} as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args || [],
  env: { ...getDefaultEnvironment(), ...(plan.env || {}) },
  cwd: plan.cwd,
  stderr: "pipe",
});
const client = new Client({ name: "duet-e2e-ts-sdk", version: "1.0.0" });

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) throw new Error(`${name}: ${res.content[0].text}`);
  if (!res.content?.[0]?.text) throw new Error(`${name}: no text content`);
  return res.structuredContent;
}

async function main() {
  await client.connect(transport);
  await client.listTools(); // the SDK then validates structuredContent against each outputSchema
  const list = await call("list_test_tasks", {});
  const taskId = list.tasks[0].id;
  await call("get_test_task", { taskId });
  const key = "ts-sdk-" + Date.now();
  const start = await call("start_test_run", { taskId, idempotencyKey: key });
  const again = await call("start_test_run", { taskId, idempotencyKey: key });
  let run;
  const deadline = Date.now() + 60_000;
  for (;;) {
    run = await call("get_test_run", { runId: start.runId });
    if (run.run.done) break;
    if (Date.now() > deadline) throw new Error("the run did not finish");
    await new Promise((r) => setTimeout(r, 100));
  }
  const executions = [];
  for (const x of run.executions) {
    executions.push((await call("get_execution_result", { executionId: x.executionId })).execution);
  }
  console.log(JSON.stringify({ tasks: list.total, runId: start.runId, replayedRunId: again.replayed ? again.runId : null, run: run.run, executions }));
  await client.close();
}

main().catch((err) => {
  console.error(String(err?.stack || err));
  process.exit(1);
});
