// A real OpenID Connect provider (oidc-provider) for the single sign-on tests, on loopback.
//
//   node provider.js PORT CONFIG.json
//
// CONFIG.json (written by tests/support/oidc.py): {"issuer", "clients": [oidc-provider client
// metadata], "accounts": {login: {"groups": [...], "email", "name"}}}. Its login and consent pages
// are oidc-provider's own development interactions: any login of `accounts` with any password.
//
// The tests also need ID tokens no honest provider issues (expired, altered, signed with another
// key, for another nonce or audience): POST /test/next-id-token with `mode=<one of MODES>` makes
// the next token response carry such a token in place of the one the provider signed.
import { readFileSync } from 'node:fs';

import * as jose from 'jose';
import Provider from 'oidc-provider';

const [port, configPath] = process.argv.slice(2);
if (!port || !configPath) {
  console.error('usage: node provider.js PORT CONFIG.json');
  process.exit(2);
}
const config = JSON.parse(readFileSync(configPath, 'utf8'));

const ALG = 'RS256';
const signing = await jose.generateKeyPair(ALG, { extractable: true });
const signingJwk = { ...(await jose.exportJWK(signing.privateKey)), kid: 'watershed-test', alg: ALG, use: 'sig' };
// same kid, another key: a token it signs names the provider's key but does not verify with it
const stranger = await jose.generateKeyPair(ALG);

const MODES = {
  async expired(claims) {
    const now = Math.floor(Date.now() / 1000);
    return sign({ ...claims, iat: now - 7200, exp: now - 3600 }, signing.privateKey);
  },
  async 'wrong-key'(claims) {
    return sign(claims, stranger.privateKey);
  },
  async 'other-nonce'(claims) {
    return sign({ ...claims, nonce: 'not-the-nonce-of-this-login' }, signing.privateKey);
  },
  async 'other-audience'(claims) {
    return sign({ ...claims, aud: 'another-client' }, signing.privateKey);
  },
  // the provider's own signature kept over a payload whose groups were changed
  async tampered(claims, token) {
    const [header, , signature] = token.split('.');
    const payload = Buffer.from(JSON.stringify({ ...claims, groups: ['watershed-admins'] })).toString('base64url');
    return `${header}.${payload}.${signature}`;
  },
};

function sign(claims, key) {
  return new jose.SignJWT(claims).setProtectedHeader({ alg: ALG, kid: signingJwk.kid }).sign(key);
}

const provider = new Provider(config.issuer, {
  clients: config.clients,
  jwks: { keys: [signingJwk] },
  cookies: { keys: ['watershed-oidc-test-cookies'] },
  claims: { openid: ['sub'], email: ['email'], profile: ['name', 'preferred_username'], groups: ['groups'] },
  // the groups in the ID token itself, as Keycloak, Okta and Azure AD put them there when asked
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  pkce: { required: () => true },
  async findAccount(ctx, sub) {
    const account = config.accounts[sub];
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        return { sub, ...account };
      },
    };
  },
});

let nextMode = null;
provider.use(async (ctx, next) => {
  if (ctx.method === 'POST' && ctx.path === '/test/next-id-token') {
    const body = await new Promise((resolve) => {
      let text = '';
      ctx.req.on('data', (chunk) => { text += chunk; });
      ctx.req.on('end', () => resolve(new URLSearchParams(text)));
    });
    const mode = body.get('mode');
    if (!(mode in MODES)) {
      ctx.status = 400;
      ctx.body = { error: `mode ${mode}: expected one of ${Object.keys(MODES).join(', ')}` };
      return;
    }
    nextMode = mode;
    ctx.status = 204;
    return;
  }
  await next();
  if (ctx.path === '/token' && nextMode && ctx.body && ctx.body.id_token) {
    const mode = nextMode;
    nextMode = null;
    const claims = jose.decodeJwt(ctx.body.id_token);
    ctx.body = { ...ctx.body, id_token: await MODES[mode](claims, ctx.body.id_token) };
  }
});

provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${config.issuer}`);
});
