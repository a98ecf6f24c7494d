// An MCP client written by others (the official TypeScript SDK), driven by a
// JSON plan, for Duet's interoperability tests (test/interop).
//
//   node sdk-client.mjs PLAN_JSON
//
// PLAN_JSON:
//   {"transport": "stdio", "command": "/path/duet", "args": ["mcp"], "env": {...}, "cwd": "/dir",
//    "list": true, "calls": [{"name": "...", "arguments": {...}}], "soakSeconds": 0}
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp/http", "headers": {...}, ...}
//
// stdio servers start, as desktop clients start them, with only the SDK's
// default environment (HOME, PATH, USER, ...) plus the plan's env.
// With soakSeconds > 0 the calls repeat in one session for that long, and the
// server process's memory (VmRSS) and threads are sampled once a second
// (stdio only: the client knows the server's pid).
//
// Prints one JSON object: {"protocolVersion", "serverInfo", "tools", "results",
// "iterations", "samples"}. The SDK validates structuredContent against each
// tool's outputSchema once tools/list was called, and throws when they
// disagree: that is a failure here (exit 1).
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(process.argv[2]);

function procStatus(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, "utf8");
    const num = (k) => Number((s.match(new RegExp(`^${k}:\\s+(\\d+)`, "m")) || [])[1] || 0);
    return { rssKB: num("VmRSS"), threads: num("Threads") };
  } catch {
    return null;
  }
}

async function main() {
  let transport;
  if (plan.transport === "stdio") {
    transport = new StdioClientTransport({
      command: plan.command,
      args: plan.args || [],
      env: { ...getDefaultEnvironment(), ...(plan.env || {}) },
      cwd: plan.cwd,
      stderr: "pipe",
    });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(plan.url), {
      requestInit: { headers: plan.headers || {} },
    });
  }
  const client = new Client({ name: "duet-interop-ts-sdk", version: "1.0.0" });
  await client.connect(transport);
  const out = {
    protocolVersion: transport.protocolVersion ?? null,
    serverInfo: client.getServerVersion(),
    tools: null,
    results: [],
    iterations: 0,
    samples: [],
  };
  if (plan.list) {
    out.tools = (await client.listTools()).tools;
  }
  const callAll = async () => {
    const res = [];
    for (const c of plan.calls || []) {
      res.push(await client.callTool({ name: c.name, arguments: c.arguments || {} }));
    }
    return res;
  };
  out.results = await callAll();
  out.iterations = 1;
  if (plan.soakSeconds > 0) {
    const pid = transport.pid;
    const start = Date.now();
    let next = start;
    while (Date.now() - start < plan.soakSeconds * 1000) {
      const res = await callAll();
      out.iterations++;
      if (JSON.stringify(res.map((r) => r.structuredContent)) !== JSON.stringify(out.results.map((r) => r.structuredContent))) {
        throw new Error(`iteration ${out.iterations}: results changed within one session`);
      }
      if (Date.now() >= next && pid) {
        out.samples.push({ t: (Date.now() - start) / 1000, iterations: out.iterations, ...procStatus(pid) });
        next += 1000;
      }
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => {
  process.stderr.write(`sdk-client: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
