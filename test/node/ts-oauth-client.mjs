// An MCP client we did not write — the official TypeScript SDK client with
// its OAuth provider — that knows only Duet's URL: it discovers the
// protected resource metadata and the authorization server, registers
// itself (dynamic client registration), sends the person's browser to sign
// in, and calls tools with the token it gets.
//
// The "browser" here is programmatic: it follows the redirects (keeping
// cookies), fills the identity provider's login form with the username and
// password given, and presses Allow on Duet's consent screen.
//
// Usage: node ts-oauth-client.mjs MCP_URL USERNAME PASSWORD
// Prints one JSON line: {tools, result, granted, refreshed}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [url, username, password] = process.argv.slice(2);
const redirectUrl = 'http://127.0.0.1:9/ts-client/callback'; // captured, never visited

class Provider {
  constructor() { this.authUrl = null; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK test client',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() { return 'ts-state-1'; }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(t) { this.saved = t; }
  redirectToAuthorization(u) { this.authUrl = u; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

// browse plays the person's browser from start until a redirect to the
// client's redirect URL, and returns that URL.
async function browse(start) {
  const jar = new Map();
  let next = start, method = 'GET', body;
  for (let i = 0; i < 20; i++) {
    if (next.startsWith(redirectUrl)) return new URL(next);
    const u = new URL(next);
    const cookie = [...jar].filter(([k]) => k.startsWith(u.host + ' ')).map(([k, v]) => `${k.split(' ')[1]}=${v}`).join('; ');
    const headers = {};
    if (cookie) headers.cookie = cookie;
    if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
    const resp = await fetch(next, { method, body, headers, redirect: 'manual' });
    for (const sc of resp.headers.getSetCookie()) {
      const [pair] = sc.split(';');
      const eq = pair.indexOf('=');
      jar.set(u.host + ' ' + pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    const loc = resp.headers.get('location');
    if (resp.status >= 300 && resp.status < 400 && loc) {
      next = new URL(loc, next).href; method = 'GET'; body = undefined;
      continue;
    }
    const page = await resp.text();
    if (resp.status !== 200) throw new Error(`${method} ${next}: HTTP ${resp.status}: ${page.slice(0, 300)}`);
    const fields = new URLSearchParams();
    for (const m of page.matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) fields.set(m[1], m[2]);
    const action = (page.match(/<form[^>]*action="([^"]*)"/) || [])[1] || next;
    if (page.includes('name="password"')) { // the identity provider's login form
      fields.set('username', username);
      fields.set('password', password);
    } else if (fields.get('consent')) { // Duet's consent screen
      fields.set('action', 'allow');
    } else {
      throw new Error(`${next}: no form to fill: ${page.slice(0, 300)}`);
    }
    next = new URL(action.replaceAll('&amp;', '&'), next).href; method = 'POST'; body = fields.toString();
  }
  throw new Error('too many steps');
}

const provider = new Provider();
const first = new Client({ name: 'ts-oauth-client', version: '1.0.0' });
try {
  await first.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  throw new Error('connected without signing in');
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
}
if (!provider.authUrl) throw new Error('the client was not sent to sign in');
const back = await browse(provider.authUrl.href);
if (back.searchParams.get('state') !== 'ts-state-1') throw new Error('state not returned: ' + back);
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
await transport.finishAuth(back.searchParams.get('code'));
const client = new Client({ name: 'ts-oauth-client', version: '1.0.0' });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
const res = await client.callTool({ name: 'list_test_tasks', arguments: {} });
const granted = provider.tokens().scope;
const hadRefresh = Boolean(provider.tokens().refresh_token);
await client.close();
console.log(JSON.stringify({ tools, result: res.structuredContent, isError: Boolean(res.isError), granted, hadRefresh, clientId: provider.info.client_id }));
