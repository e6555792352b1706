// Impact analysis in the steward UI: what lies downstream of a table or column, grouped by owner,
// with a CSV export. The API is GET /api/v1/impact/{id} (api/http/routers/impact.py).

import { html, useState, useEffect } from './vendor/htm-preact.js';
import { get, qs, enc } from './api.js';
import { href, ErrorBox } from './ui.js';

const tagText = (tags) => Object.entries(tags || {}).map(([k, v]) => `${k}=${v.join(',')}`);

function ttlText(item) {
  const parts = [];
  if (item.ttl_days !== null && item.ttl_days !== undefined) parts.push(`${item.ttl_days} days`);
  if (item.ttl_status) {
    const days = item.ttl_days_recommended;
    parts.push(`advice: ${item.ttl_status}${days !== null && days !== undefined ? ` ${days} days` : ''}`);
  }
  return parts.join(' · ');
}

function summary(data) {
  const listed = data.groups.reduce((n, g) => n + g.count, 0);
  const parts = [`${data.total_bounded ? `more than ${data.total}` : data.total} downstream`];
  if (data.truncated) parts.push(`the nearest ${listed} listed`);
  if (data.hidden) parts.push(`${data.hidden} in databases you may not see`);
  return parts.join(' · ');
}

function Group({ group }) {
  return html`<div class="impact-group" data-owner=${group.owner || ''}>
    <h3>${group.owner || '(no owner)'} <span class="count">${group.count}</span></h3>
    <table class="grid">
      <thead><tr><th>node</th><th>kind</th><th>via</th><th>hops</th><th>layer</th><th>tags</th><th>TTL</th></tr></thead>
      <tbody>${group.items.map(
        (item) => html`<tr data-node=${item.id}>
          <td><a href=${href(item.kind === 'table' ? 'table' : 'column', item.id)}>${item.id}</a></td>
          <td>${item.kind}</td>
          <td title=${item.via === 'influences' ? 'reached only by a weak edge: a filter, join or condition' : 'its value derives from here'}>${item.via === 'influences' ? 'weak' : 'value'}</td>
          <td>${item.hops}</td><td>${item.layer || ''}</td>
          <td>${tagText(item.tags).map((t) => html`<span class="chip">${t}</span>`)}</td>
          <td>${ttlText(item)}</td>
        </tr>`,
      )}</tbody>
    </table>
  </div>`;
}

export function ImpactPage({ id, params }) {
  const limit = params.limit || '';
  const [state, setState] = useState({ data: null, error: null });
  useEffect(() => {
    let live = true;
    get(`/impact/${enc(id)}${qs({ limit })}`).then(
      (data) => live && setState({ data, error: null }),
      (error) => live && setState({ data: null, error }),
    );
    return () => {
      live = false;
    };
  }, [id, limit]);
  const { data, error } = state;
  const page = id.split('.').length >= 3 ? 'column' : 'table';
  return html`<section class="impact-page">
    <h2>Impact of <a href=${href(page, id)}>${id}</a></h2>
    <${ErrorBox} error=${error} />
    ${!data && !error ? html`<p class="loading">Loading…</p>` : null}
    ${data
      ? html`<p class="facts" data-testid="impact-summary">${summary(data)}${' · '}<a data-testid="impact-csv" download
            href=${`/api/v1/impact/${enc(id)}${qs({ format: 'csv', limit })}`}>Export CSV</a>${' · '}<a
            href=${`/api/v1/impact/${enc(id)}${qs({ limit })}`} target="_blank" rel="noopener">JSON</a></p>
          ${data.groups.length ? data.groups.map((g) => html`<${Group} group=${g} />`) : html`<p>Nothing downstream.</p>`}`
      : null}
  </section>`;
}
