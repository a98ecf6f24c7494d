// An identity provider that supports enterprise-managed authorization
// (SEP-990), built on the `jose` library (the JOSE implementation the MCP
// conformance suite's own identity provider uses): OpenID Connect
// discovery and keys, ID tokens for a signed-in person, and the token
// exchange (RFC 8693) of an ID token for an identity assertion JWT
// authorization grant (ID-JAG, typ oauth-id-jag+jwt) for another
// authorization server. No Go identity provider implements ID-JAG yet;
// zitadel/oidc (the other tests' provider) does not.
//
// Usage: node idjag-idp.mjs — prints its URL on stdout, serves until stdin
// closes. Endpoints beyond the standard ones, standing in for what an
// administrator and a person's login do at a real provider:
//   POST /admin/clients  client_id=...&resource_client_id=...  (which client
//        id the app has at the resource's authorization server)
//   POST /login  user=...&password=verysecure  → {"id_token": ...}
import http from 'node:http';
import * as jose from 'jose';

const { publicKey, privateKey } = await jose.generateKeyPair('ES256');
const jwk = { ...(await jose.exportJWK(publicKey)), kid: 'idp-key-1', alg: 'ES256', use: 'sig' };
const clients = new Map(); // IdP client id → client id at the resource AS
let issuer;

async function form(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

function json(res, status, v) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(v));
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, issuer);
  if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration') {
    return json(res, 200, {
      issuer, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks`, authorization_endpoint: `${issuer}/authorize`,
      response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['ES256'],
      grant_types_supported: ['urn:ietf:params:oauth:grant-type:token-exchange'],
    });
  }
  if (req.method === 'GET' && url.pathname === '/jwks') return json(res, 200, { keys: [jwk] });
  if (req.method === 'POST' && url.pathname === '/admin/clients') {
    const f = await form(req);
    clients.set(f.get('client_id'), f.get('resource_client_id'));
    return json(res, 200, {});
  }
  if (req.method === 'POST' && url.pathname === '/login') {
    const f = await form(req);
    if (f.get('password') !== 'verysecure') return json(res, 401, { error: 'access_denied' });
    const idToken = await new jose.SignJWT({ email: `${f.get('user')}@example.com` })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid }).setIssuer(issuer).setSubject(f.get('user'))
      .setAudience(f.get('client_id')).setIssuedAt().setExpirationTime('1h').sign(privateKey);
    return json(res, 200, { id_token: idToken });
  }
  if (req.method === 'POST' && url.pathname === '/token') {
    const f = await form(req);
    if (f.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange') return json(res, 400, { error: 'unsupported_grant_type' });
    if (f.get('requested_token_type') !== 'urn:ietf:params:oauth:token-type:id-jag' ||
        f.get('subject_token_type') !== 'urn:ietf:params:oauth:token-type:id_token') return json(res, 400, { error: 'invalid_request' });
    const client = f.get('client_id');
    const resourceClient = clients.get(client);
    if (!resourceClient) return json(res, 400, { error: 'invalid_client' });
    let sub;
    try {
      ({ payload: { sub } } = await jose.jwtVerify(f.get('subject_token'), publicKey, { issuer, audience: client }));
    } catch {
      return json(res, 400, { error: 'invalid_grant' });
    }
    const jag = await new jose.SignJWT({ resource: f.get('resource'), client_id: resourceClient, scope: f.get('scope') || undefined })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'oauth-id-jag+jwt' }).setIssuer(issuer).setSubject(sub)
      .setAudience(f.get('audience')).setIssuedAt().setExpirationTime('5m').setJti(crypto.randomUUID()).sign(privateKey);
    return json(res, 200, { access_token: jag, issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag', token_type: 'N_A', expires_in: 300 });
  }
  json(res, 404, { error: 'not_found' });
});
server.listen(0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  console.log(issuer);
});
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.stdin.resume();
