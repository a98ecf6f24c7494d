// An MCP server built with the official TypeScript SDK (the version pinned in
// package.json), for Duet's client interoperability tests.
//
//   node ts-server.mjs [TOKEN]
//
// Serves Streamable HTTP with sessions (SSE replies) at
// http://127.0.0.1:PORT/mcp on a free loopback port and prints
// "listening http://127.0.0.1:PORT/mcp" once ready. With TOKEN, every request
// must carry "Authorization: Bearer TOKEN" (401 otherwise). Tools:
//   echo {text}         -> text "echo: TEXT", structuredContent {echo: TEXT, length}
//   fail {}             -> isError result "FAILED: on purpose"
// Stops on SIGTERM or when stdin closes.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const token = process.argv[2] || '';

const tools = [
  {
    name: 'echo',
    description: 'Echo a text back.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    outputSchema: {
      type: 'object',
      properties: { echo: { type: 'string' }, length: { type: 'integer' } },
      required: ['echo', 'length'],
    },
    annotations: { readOnlyHint: true },
  },
  { name: 'fail', description: 'Always fails.', inputSchema: { type: 'object', properties: {} } },
];

function newServer() {
  const server = new Server({ name: 'ts-sdk-server', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const args = req.params.arguments || {};
    switch (req.params.name) {
      case 'echo':
        return {
          content: [{ type: 'text', text: `echo: ${args.text}` }],
          structuredContent: { echo: String(args.text), length: String(args.text).length },
        };
      case 'fail':
        return { content: [{ type: 'text', text: 'FAILED: on purpose' }], isError: true };
      default:
        throw new Error(`Unknown tool: ${req.params.name}`);
    }
  });
  return server;
}

const transports = new Map();

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  try {
    if (!req.url.startsWith('/mcp')) {
      res.writeHead(404).end('not found');
      return;
    }
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'WWW-Authenticate': 'Bearer realm="ts-server"' }).end('unauthorized');
      return;
    }
    const sid = req.headers['mcp-session-id'];
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      if (req.method !== 'POST' || !body || body.method !== 'initialize') {
        res.writeHead(sid ? 404 : 400, { 'Content-Type': 'application/json' }).end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' }, id: null }),
        );
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (err) {
    if (!res.headersSent) res.writeHead(500).end(String(err));
  }
});

httpServer.listen(0, '127.0.0.1', () => {
  const { port } = httpServer.address();
  process.stdout.write(`listening http://127.0.0.1:${port}/mcp\n`);
});

function stop() {
  for (const t of transports.values()) t.close().catch(() => {});
  httpServer.close();
  httpServer.closeAllConnections?.();
  setTimeout(() => process.exit(0), 200).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.resume();
