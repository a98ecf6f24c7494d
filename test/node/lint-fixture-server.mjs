// A stdio MCP server built with the official TypeScript SDK (the version
// pinned in package.json) whose tools/list has the schema problems MCP
// Inspector's --strict reports, for Duet's interoperability tests: proof that
// the strict check the tests run on Duet's own catalog can fail.
//
//   node lint-fixture-server.mjs
//
// Tool "lookup": property "note" has "type": ["null", "string"] (a type
// union: a warning) and property "extra" is a bare `true` schema (an error).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const tools = [
  {
    name: 'lookup',
    description: 'Look up a record by its id and return it; use it to check that a record exists.',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'the id of the record' },
        note: { type: ['null', 'string'], description: 'a note, or null' },
        extra: true,
      },
      required: ['id'],
    },
  },
];

const server = new Server({ name: 'lint-fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => ({
  content: [{ type: 'text', text: `looked up ${req.params.arguments?.id}` }],
}));
await server.connect(new StdioServerTransport());
