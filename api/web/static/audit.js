// The audit trail in the steward UI: the admins' Audit page (filters by actor, action, node and
// time, a page at a time) and a node's History on its column or table page (stewards of its
// database). Both read GET /api/v1/audit (api/http/routers/users.py); the times are UTC, as the
// entries' `at` are.

import { html, useState } from './vendor/htm-preact.js';
import { qs } from './api.js';
import { href, canChange, ErrorBox, usePages } from './ui.js';

export const mayReadTrail = (me) => !!me && me.role === 'admin' && (me.databases === null || me.databases === undefined);

const FILTERS = ['actor', 'action', 'node', 'since', 'until'];

// A change of a node names `db.table[.column]` or `db.table[.column]:key`: that part links to its page.
function Target({ target }) {
  const [node, key] = target.split(/:(.*)/s);
  const parts = node.split('.');
  if (/^[a-z]+$/.test(node) || parts.length < 2 || parts.length > 3) return html`<span>${target}</span>`;
  return html`<a href=${href(parts.length === 3 ? 'column' : 'table', node)}>${node}</a>${key ? `:${key}` : ''}`;
}

const shown = (value) => (value === null || value === undefined ? '' : JSON.stringify(value));

// `withTarget`: the entry's target; else (a node's own history) only the tag key it names.
function Entries({ items, withTarget }) {
  return html`<table class="grid audit-entries">
    <thead><tr><th>at (UTC)</th><th>actor</th><th>action</th><th>${withTarget ? 'target' : 'key'}</th><th>before</th><th>after</th></tr></thead>
    <tbody>${items.map(
      (e) => html`<tr data-entry=${e.id} data-action=${e.action}>
        <td class="nowrap">${e.at.replace('T', ' ').replace(/\+00:00$/, '')}</td><td>${e.actor}</td><td>${e.action}</td>
        <td>${withTarget ? html`<${Target} target=${e.target} />` : e.target.split(':')[1] || ''}</td>
        <td class="json">${shown(e.before)}</td><td class="json">${shown(e.after)}</td>
      </tr>`,
    )}</tbody>
  </table>`;
}

export function AuditPage({ me, params }) {
  if (!mayReadTrail(me)) return html`<p class="error" role="alert">The audit trail needs an admin of all databases.</p>`;
  return html`<${Trail} params=${params} />`;
}

function Trail({ params }) {
  const [form, setForm] = useState(Object.fromEntries(FILTERS.map((f) => [f, params[f] || ''])));
  const [query, setQuery] = useState(form);
  const { items, next, first, error, more } = usePages(
    (cursor) => `/audit${qs({ ...query, limit: params.limit || 50, cursor })}`,
    [JSON.stringify(query)],
  );
  const submit = (event) => {
    event.preventDefault();
    history.replaceState(null, '', `#/audit${qs({ ...form, limit: params.limit })}`);
    setQuery({ ...form });
  };
  const field = (name, placeholder, type = 'text') => html`<label>${name}${' '}<input name=${name} type=${type}
    placeholder=${placeholder} value=${form[name]} onInput=${(e) => setForm({ ...form, [name]: e.target.value })} /></label>`;
  return html`<section class="audit-page">
    <h2>Audit</h2>
    <form class="row" onSubmit=${submit} data-testid="audit-filters">
      ${field('actor', 'user, e.g. steward')}
      ${field('action', 'action or prefix, e.g. tag.')}
      ${field('node', 'db.table or db.table.column')}
      ${field('since', '', 'datetime-local')}
      ${field('until', '', 'datetime-local')}
      <button type="submit">Filter</button>
    </form>
    <${ErrorBox} error=${error} />
    ${first && !items.length ? html`<p data-testid="audit-none">No entries.</p>` : null}
    ${items.length ? html`<${Entries} items=${items} withTarget=${true} />` : null}
    ${next ? html`<button onClick=${more} data-testid="audit-more">More</button>` : null}
  </section>`;
}

// A node's own changes (tags, blocks, discovery decisions), newest first; shown to those who
// may read it: a steward of the node's database. It is read again whenever `watch` changes (the
// page's node as read again after a change).
export function NodeHistory({ me, nodeId, watch }) {
  if (!canChange(me, nodeId)) return null;
  return html`<${History} nodeId=${nodeId} watch=${watch} />`;
}

function History({ nodeId, watch }) {
  const { items, next, first, error, more } = usePages(
    (cursor) => `/audit${qs({ node: nodeId, limit: 20, cursor })}`,
    [nodeId, watch],
  );
  return html`<div class="node-history" data-testid="node-history">
    <h3>History</h3>
    <${ErrorBox} error=${error} />
    ${first && !items.length ? html`<p>No changes recorded.</p>` : null}
    ${items.length ? html`<${Entries} items=${items} withTarget=${false} />` : null}
    ${next ? html`<button class="small" onClick=${more}>More</button>` : null}
  </div>`;
}
