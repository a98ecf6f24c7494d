// The official MCP Tasks client — @modelcontextprotocol/ext-tasks (pinned),
// on the TypeScript SDK v2 client — calling tools of a 2026-07-28 server as
// tasks, for test/interop's TestTasksClient.
//
//   node ext-tasks-client.mjs PLAN_JSON
//
// PLAN_JSON: {"url": "http://127.0.0.1:PORT/mcp/http", "headers": {...},
//             "calls": [{"name": "...", "arguments": {...}}, ...]}
//
// The client negotiates 2026-07-28 (server/discover), and ext-tasks drives
// each call: tools/call with the Tasks extension declared, then tasks/get
// until the task ends, validating every answer with its own schemas (a
// completed task's inlined result must be a complete CallToolResult:
// resultType "complete"). ext-tasks sends 2026-07-28 Tasks requests through
// a dispatcher the host provides (the SDK client's codecs do not know their
// shapes): rawDispatch below POSTs them with the headers the revision
// requires (Mcp-Method, Mcp-Name).
// Prints one line of JSON: [{"name", "status", "result" | "error",
// "taskId", "completedGet": the raw result of the last tasks/get}].
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

const plan = JSON.parse(process.argv[2]);
const protocolVersion = "2026-07-28";
const clientInfo = { name: "duet-interop-ext-tasks", version: "1.0.0" };
const clientCapabilities = {};

let nextID = 1;
const lastGet = new Map(); // taskId → the raw result of its last tasks/get

// readReply reads a JSON-RPC reply from a JSON body or an event stream.
async function readReply(resp, id) {
  const text = await resp.text();
  if (!(resp.headers.get("content-type") ?? "").startsWith("text/event-stream")) return JSON.parse(text);
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
    if (!data) continue;
    const msg = JSON.parse(data);
    if (msg.id === id) return msg;
  }
  throw new Error(`no reply to request ${id} in the event stream: ${text}`);
}

async function rawDispatch(request, options = {}) {
  const id = nextID++;
  const body = { jsonrpc: "2.0", id, method: request.method, ...(request.params === undefined ? {} : { params: request.params }) };
  const name = request.method === "tools/call" ? request.params?.name : request.params?.taskId;
  const resp = await fetch(plan.url, {
    method: "POST",
    signal: options.signal,
    headers: {
      ...plan.headers,
      ...(options.context?.headers ?? {}),
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": protocolVersion,
      "Mcp-Method": request.method,
      ...(name === undefined ? {} : { "Mcp-Name": String(name) }),
    },
    body: JSON.stringify(body),
  });
  const msg = await readReply(resp, id);
  if (msg.error) return { kind: "error", error: msg.error };
  if (request.method === "tasks/get") lastGet.set(request.params.taskId, msg.result);
  return { kind: "result", result: msg.result };
}

async function main() {
  const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: "auto" } });
  const transport = new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers: plan.headers } });
  await client.connect(transport);
  if (client.getNegotiatedProtocolVersion() !== protocolVersion) {
    throw new Error(`negotiated ${client.getNegotiatedProtocolVersion()}, want ${protocolVersion}`);
  }
  const session = createTaskSessionFromClient(client, {
    endpointId: "duet-interop",
    rawDispatch,
    v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities },
  });
  const out = [];
  try {
    for (const call of plan.calls) {
      const entry = { name: call.name };
      try {
        const execution = await session.callTool(call.name, call.arguments ?? {}, { task: { preference: "require" } });
        entry.taskId = execution.handle?.taskId ?? null;
        const { outcome } = await execution.settle();
        entry.status = outcome.status;
        if (outcome.status === "completed") entry.result = outcome.result;
        if (outcome.status === "failed") entry.error = String(outcome.error?.message ?? outcome.error);
      } catch (err) {
        entry.status = "rejected";
        entry.error = String(err?.stack || err);
      }
      entry.completedGet = entry.taskId ? lastGet.get(entry.taskId) ?? null : null;
      out.push(entry);
    }
  } finally {
    await session.close();
    await client.close();
  }
  console.log(JSON.stringify(out));
}

main().catch((err) => {
  console.error(String(err?.stack || err));
  process.exit(1);
});
