// Webhooks in the steward UI: an admin of all databases adds subscriptions (the signing secret is
// shown once, in the answer), pauses, resumes and removes them, reads a subscription's delivery
// history, and retries dead letters. The routes are /api/v1/webhooks (api/http/routers/webhooks.py);
// docs/notifications.md says what each event kind sends and how a receiver checks the signature.

import { html, useState, useEffect } from './vendor/htm-preact.js';
import { api, get, qs } from './api.js';
import { ErrorBox, usePages } from './ui.js';

export const mayManageWebhooks = (me) =>
  !!me && me.role === 'admin' && (me.databases === null || me.databases === undefined);

const when = (at) => (at || '').replace('T', ' ').replace(/(\.\d+)?\+00:00$/, '');

export function WebhooksPage({ me }) {
  const [reloads, setReloads] = useState(0);
  const [chosen, setChosen] = useState(null);
  if (!mayManageWebhooks(me)) return html`<p class="error" role="alert">Webhooks need an admin of all databases.</p>`;
  const changed = () => setReloads(reloads + 1);
  return html`<section class="webhooks-page">
    <h2>Webhooks</h2>
    <${AddForm} onAdded=${changed} />
    <${Subscriptions} reloads=${reloads} chosen=${chosen} onChoose=${setChosen} onChange=${changed} />
    ${chosen ? html`<${Deliveries} subscription=${chosen} reloads=${reloads} />` : null}
    <${DeadLetters} reloads=${reloads} onRetry=${changed} />
  </section>`;
}

function AddForm({ onAdded }) {
  const [kinds, setKinds] = useState([]);
  const [url, setUrl] = useState('');
  const [wanted, setWanted] = useState([]);
  const [created, setCreated] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    get('/webhooks/kinds').then(setKinds, setError);
  }, []);
  const toggle = (kind) => setWanted(wanted.includes(kind) ? wanted.filter((k) => k !== kind) : [...wanted, kind]);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      setCreated(await api('POST', '/webhooks', { url, kinds: wanted }));
      setUrl('');
      setWanted([]);
      onAdded();
    } catch (e) {
      setError(e);
    }
  };
  return html`<form class="webhook-add" onSubmit=${submit} data-testid="webhook-add">
    <label>URL <input name="url" type="url" required size="60" placeholder="https://hooks.example.com/watershed" value=${url}
      onInput=${(e) => setUrl(e.target.value)} /></label>
    <fieldset><legend>Event kinds</legend>${kinds.map(
      (k) => html`<label title=${k.description}><input type="checkbox" name="kind" value=${k.kind}
        checked=${wanted.includes(k.kind)} onChange=${() => toggle(k.kind)} /> ${k.kind}</label>`,
    )}</fieldset>
    <button type="submit">Add webhook</button>
    <${ErrorBox} error=${error} />
    ${created
      ? html`<p class="notice" data-testid="webhook-created">Webhook ${created.id} added. Its signing secret, shown
          only now (keep it for the receiver): <code data-testid="webhook-secret">${created.secret}</code></p>`
      : null}
  </form>`;
}

function Subscriptions({ reloads, chosen, onChoose, onChange }) {
  const { items, next, first, error, more } = usePages((cursor) => `/webhooks${qs({ cursor })}`, [reloads]);
  const [failed, setFailed] = useState(null);
  const act = async (method, path, body) => {
    setFailed(null);
    try {
      await api(method, path, body);
      onChange();
    } catch (e) {
      setFailed(e);
    }
  };
  return html`<div class="webhook-subscriptions">
    <h3>Subscriptions</h3>
    <${ErrorBox} error=${error || failed} />
    ${first && !items.length ? html`<p data-testid="webhooks-none">No webhooks.</p>` : null}
    ${items.length
      ? html`<table class="grid"><thead><tr><th>id</th><th>URL</th><th>kinds</th><th>state</th><th>created</th><th></th></tr></thead>
        <tbody>${items.map(
          (s) => html`<tr data-subscription=${s.id} class=${s.id === chosen ? 'chosen' : ''}>
            <td>${s.id}</td><td class="url">${s.url}</td><td>${s.kinds.join(', ')}</td>
            <td>${s.active ? 'active' : 'paused'}</td><td>${s.created_by || ''} ${when(s.created_at)}</td>
            <td class="nowrap">
              <button class="small" data-action="deliveries" onClick=${() => onChoose(s.id)}>Deliveries</button>
              <button class="small" data-action=${s.active ? 'pause' : 'resume'}
                onClick=${() => act('PATCH', `/webhooks/${s.id}`, { active: !s.active })}>${s.active ? 'Pause' : 'Resume'}</button>
              <button class="small" data-action="remove" onClick=${() => {
                if (confirm(`Remove ${s.url} with its history and dead letters?`)) act('DELETE', `/webhooks/${s.id}`);
              }}>Remove</button>
            </td></tr>`,
        )}</tbody></table>`
      : null}
    ${next ? html`<button class="small" onClick=${more}>More</button>` : null}
  </div>`;
}

function Deliveries({ subscription, reloads }) {
  const [shown, setShown] = useState(0);
  const { items, next, first, error, more } = usePages(
    (cursor) => `/webhooks/${subscription}/deliveries${qs({ cursor, limit: 20 })}`,
    [subscription, reloads, shown],
  );
  return html`<div class="webhook-deliveries" data-testid="webhook-deliveries">
    <h3>Deliveries of ${subscription} <button class="small" onClick=${() => setShown(shown + 1)}>Refresh</button></h3>
    <${ErrorBox} error=${error} />
    ${first && !items.length ? html`<p>No attempts yet.</p>` : null}
    ${items.length
      ? html`<table class="grid"><thead><tr><th>at (UTC)</th><th>delivery</th><th>kind</th><th>attempt</th><th>status</th><th>outcome</th><th>error</th></tr></thead>
        <tbody>${items.map(
          (a) => html`<tr data-attempt=${a.id} data-outcome=${a.outcome}>
            <td class="nowrap">${when(a.at)}</td><td>${a.delivery}</td><td>${a.kind}</td><td>${a.attempt}</td>
            <td>${a.status_code ?? '–'}</td><td>${a.outcome}</td><td>${a.error || ''}</td></tr>`,
        )}</tbody></table>`
      : null}
    ${next ? html`<button class="small" onClick=${more}>More</button>` : null}
  </div>`;
}

function DeadLetters({ reloads, onRetry }) {
  const { items, next, first, error, more } = usePages((cursor) => `/webhooks/dead-letters${qs({ cursor })}`, [reloads]);
  const [failed, setFailed] = useState(null);
  const retry = async (id) => {
    setFailed(null);
    try {
      await api('POST', `/webhooks/dead-letters/${id}/retry`);
      onRetry();
    } catch (e) {
      setFailed(e);
    }
  };
  return html`<div class="webhook-dead-letters" data-testid="webhook-dead-letters">
    <h3>Dead letters</h3>
    <${ErrorBox} error=${error || failed} />
    ${first && !items.length ? html`<p>No dead letters.</p>` : null}
    ${items.length
      ? html`<table class="grid"><thead><tr><th>delivery</th><th>kind</th><th>created (UTC)</th><th>attempts</th><th>last error</th><th></th></tr></thead>
        <tbody>${items.map(
          (d) => html`<tr data-dead=${d.id}>
            <td>${d.id}</td><td>${d.kind}</td><td class="nowrap">${when(d.created_at)}</td><td>${d.attempts}</td>
            <td>${d.last_error || ''}</td><td><button class="small" data-action="retry" onClick=${() => retry(d.id)}>Retry</button></td></tr>`,
        )}</tbody></table>`
      : null}
    ${next ? html`<button class="small" onClick=${more}>More</button>` : null}
  </div>`;
}
