// A 2026-07-28 client written by others — the TypeScript SDK v2 client
// (@modelcontextprotocol/client, pinned) — approving a shared case through a
// multi-round request (SEP-2322), for test/interop's TestApprovalOverMCP.
//
//   node v2-approve.mjs PLAN_JSON
//
// PLAN_JSON: {"url": "http://127.0.0.1:PORT/mcp/http", "headers": {...},
//             "taskName": "...", "idempotencyKey": "...", "approve": true}
//
// The client negotiates 2026-07-28 (versionNegotiation "auto": server/discover,
// no initialize), declares elicitation, and calls start_test_run. The server
// answers with an input-required result asking for the approval; the SDK
// fulfils it through the elicitation handler below (answering "approve") and
// calls again with the answer and the request state, inside callTool.
// Prints {"protocolVersion", "asked": [messages], "result": structuredContent,
// "isError", "text"}.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const plan = JSON.parse(process.argv[2]);

async function main() {
  const client = new Client(
    { name: "duet-interop-ts-v2", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "auto" } },
  );
  const asked = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push(request.params.message);
    if (!plan.approve) return { action: "decline" };
    return { action: "accept", content: { approve: true } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers: plan.headers } });
  await client.connect(transport);
  const list = await client.callTool({ name: "list_test_tasks", arguments: { query: plan.taskName } });
  const task = list.structuredContent.tasks.find((t) => t.name === plan.taskName);
  if (!task) throw new Error(`no task ${plan.taskName}: ${list.content?.[0]?.text}`);
  const res = await client.callTool({ name: "start_test_run", arguments: { taskId: task.id, idempotencyKey: plan.idempotencyKey } });
  console.log(JSON.stringify({
    protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
    asked,
    result: res.structuredContent ?? null,
    isError: !!res.isError,
    text: res.content?.[0]?.text ?? "",
  }));
  await client.close();
}

main().catch((err) => {
  console.error(String(err?.stack || err));
  process.exit(1);
});
