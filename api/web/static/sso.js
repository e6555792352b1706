// Single sign-on (OpenID Connect, docs/sso.md): the login page's "Sign in with <provider>" link,
// shown only when the service is configured for it, and a logout that ends the provider's session too.
import { html, useState, useEffect } from './vendor/htm-preact.js';
import { api, get } from './api.js';

export function SsoLogin() {
  const [info, setInfo] = useState(null);
  useEffect(() => {
    get('/oidc').then(setInfo, () => setInfo(null));
  }, []);
  if (!info || !info.enabled) return null;
  // a navigation, not a fetch: the provider's pages take over the window and send it back
  return html`<p class="sso">or</p>
    <a class="button sso" data-testid="sso-login" href=${info.login_url}>Sign in with ${info.name}</a>`;
}

// Ends the session; an SSO session's browser then goes to the provider's logout page, which
// sends it back to the login page.
export async function signOut() {
  const info = await get('/oidc').catch(() => null);
  if (!info || !info.enabled) {
    await api('DELETE', '/session');
    return;
  }
  const out = await api('POST', '/oidc/logout');
  if (out && out.end_session_url) window.location.assign(out.end_session_url);
}
