// The home page: coverage of the sensitive columns by the protection policy, as the last stored
// snapshot says (GET /api/v1/coverage: the nightly computes it, the page never scans the graph),
// and the lists each number stands for (GET /api/v1/coverage/columns). api/service/coverage.py
// defines the numbers.

import { html, useState, useEffect } from './vendor/htm-preact.js';
import { api, get, qs } from './api.js';
import { href, isSteward, ErrorBox } from './ui.js';

const LISTS = {
  unprotected: 'Not yet protected',
  uncovered: 'Sensitive, no protection rule',
  downstream: 'Unprotected below protected columns',
};

const listHref = (list, params = {}) => `#/coverage/${list}${qs(params)}`;

function sensitiveHref(snapshot, database) {
  // the search's tag filter takes one family: with several there is no one list to show
  if (snapshot.families.length !== 1) return null;
  return `#/search${qs({ kind: 'column', tag: snapshot.families[0], db: database || '' })}`;
}

function Figure({ label, value, link, testid, tone }) {
  const shown = link ? html`<a href=${link} data-testid=${`${testid}-link`}>${value}</a>` : value;
  return html`<div class=${`coverage-card ${tone || ''}`} data-testid=${testid}>
    <div class="value">${shown}</div><div class="label">${label}</div>
  </div>`;
}

// The totals of the last snapshots as lines in an inline SVG (no chart library).
const SERIES = [
  ['sensitive', 'sensitive', 'series-sensitive'],
  ['protected', 'protected', 'series-protected'],
  ['unprotected', 'not yet protected', 'series-unprotected'],
];

export function Trend({ points }) {
  if (points.length < 2) {
    return html`<p class="muted" data-testid="coverage-trend">${points.length ? 'One snapshot so far: the trend starts with the next.' : ''}</p>`;
  }
  const width = 560;
  const height = 140;
  const pad = 24;
  const top = Math.max(1, ...points.flatMap((p) => SERIES.map(([key]) => p.totals[key])));
  const x = (i) => pad + (i * (width - 2 * pad)) / (points.length - 1);
  const y = (v) => height - pad - (v * (height - 2 * pad)) / top;
  return html`<figure class="coverage-trend" data-testid="coverage-trend">
    <svg viewBox=${`0 0 ${width} ${height}`} width=${width} height=${height} role="img"
      aria-label=${`coverage over the last ${points.length} snapshots`}>
      <line class="axis" x1=${pad} y1=${height - pad} x2=${width - pad} y2=${height - pad} />
      <text class="tick" x=${pad} y=${height - 6}>${points[0].id}</text>
      <text class="tick" x=${width - pad} y=${height - 6} text-anchor="end">${points[points.length - 1].id}</text>
      <text class="tick" x=${2} y=${pad}>${top}</text>
      ${SERIES.map(
        ([key, , css]) => html`<polyline class=${css} data-series=${key}
          points=${points.map((p, i) => `${x(i).toFixed(1)},${y(p.totals[key]).toFixed(1)}`).join(' ')} />`,
      )}
    </svg>
    <figcaption>${SERIES.map(([key, label, css]) => html`<span class=${`legend ${css}`}>${label}</span>`)}</figcaption>
  </figure>`;
}

function Groups({ rows, owners, snapshot }) {
  return html`<table class="grid coverage-groups" data-testid=${owners ? 'coverage-owners' : 'coverage-databases'}>
    <thead><tr>${owners ? html`<th>owner</th>` : null}<th>database</th><th>columns</th><th>sensitive</th>
      <th>protected</th><th>not yet protected</th><th>no rule</th><th>proposals</th><th>below protected</th></tr></thead>
    <tbody>${rows.map((row) => {
      const where = owners ? { database: row.database, owner: row.owner } : { database: row.database };
      const link = (list, value) => (value ? html`<a href=${listHref(list, where)}>${value}</a>` : value);
      const sensitive = sensitiveHref(snapshot, row.database);
      return html`<tr data-database=${row.database} data-owner=${row.owner || ''}>
        ${owners ? html`<td>${row.owner}</td>` : null}<td>${row.database}</td><td>${row.columns}</td>
        <td>${sensitive && !owners && row.sensitive ? html`<a href=${sensitive}>${row.sensitive}</a>` : row.sensitive}</td>
        <td>${row.protected}</td>
        <td class="unprotected">${link('unprotected', row.unprotected)}</td>
        <td>${link('uncovered', row.uncovered)}</td>
        <td>${row.proposals ? html`<a href="#/discovery">${row.proposals}</a>` : 0}</td>
        <td>${link('downstream', row.downstream)}</td>
      </tr>`;
    })}</tbody>
  </table>`;
}

function Nightly({ nightly }) {
  if (!nightly) return html`<p class="muted" data-testid="coverage-nightly">No nightly run recorded yet.</p>`;
  const missing = nightly.missing.length ? ` (did not finish: ${nightly.missing.join(', ')})` : '';
  return html`<p data-testid="coverage-nightly">Last nightly: ${nightly.date}${' '}
    <span class=${`status ${nightly.status === 'complete' ? 'done' : 'failed'}`}>${nightly.status}</span>${missing}
    ${' · '}<a href="#/runs">Runs</a></p>`;
}

export function Dashboard({ me }) {
  const [state, setState] = useState({ data: null, error: null });
  const [busy, setBusy] = useState(false);
  const load = () =>
    get('/coverage?top=20&trend=30&downstream=20').then(
      (data) => setState({ data, error: null }),
      (error) => setState({ data: null, error }),
    );
  useEffect(() => {
    load();
  }, []);
  const refresh = async () => {
    setBusy(true);
    try {
      setState({ data: await api('POST', '/coverage/refresh'), error: null });
    } catch (error) {
      setState((old) => ({ ...old, error }));
    } finally {
      setBusy(false);
    }
  };
  const { data, error } = state;
  const snapshot = data && data.snapshot;
  const totals = snapshot && snapshot.totals;
  return html`<section class="dashboard" data-testid="dashboard">
    <h2>Coverage</h2>
    <${ErrorBox} error=${error} />
    ${!data && !error ? html`<p class="loading">Loading…</p>` : null}
    ${data && !snapshot
      ? html`<p data-testid="coverage-none">No coverage snapshot yet: the nightly run computes one${isSteward(me) ? ', or compute it now' : ''}.</p>`
      : null}
    ${data && isSteward(me)
      ? html`<p><button data-testid="coverage-refresh" disabled=${busy} onClick=${refresh}>${busy ? 'Computing…' : 'Compute now'}</button></p>`
      : null}
    ${snapshot
      ? html`<p class="facts" data-testid="coverage-as-of">As of ${snapshot.id} (computed ${snapshot.at})${data.hidden_databases
            ? ` · ${data.hidden_databases} databases you may not see left out`
            : ''}</p>
        <div class="coverage-cards">
          <${Figure} label="sensitive columns" value=${totals.sensitive} testid="coverage-sensitive" link=${totals.sensitive ? sensitiveHref(snapshot) : null} />
          <${Figure} label="protected by policy" value=${totals.protected} testid="coverage-protected" tone="good" />
          <${Figure} label="not yet protected" value=${totals.unprotected} testid="coverage-unprotected" tone=${totals.unprotected ? 'bad' : ''} link=${totals.unprotected ? listHref('unprotected') : null} />
          <${Figure} label="sensitive, no protection rule" value=${totals.uncovered} testid="coverage-uncovered" link=${totals.uncovered ? listHref('uncovered') : null} />
          <${Figure} label="proposals waiting" value=${totals.proposals} testid="coverage-proposals" link=${totals.proposals ? '#/discovery' : null} />
          <${Figure} label="unprotected below protected columns" value=${totals.downstream} testid="coverage-downstream" tone=${totals.downstream ? 'bad' : ''} link=${totals.downstream ? listHref('downstream') : null} />
        </div>`
      : null}
    ${data ? html`<${Nightly} nightly=${data.nightly} />` : null}
    ${data && data.trend.length ? html`<h3>Trend</h3><${Trend} points=${data.trend} />` : null}
    ${snapshot
      ? html`<h3>By database <span class="count">${snapshot.databases.length < data.databases_total ? `the ${snapshot.databases.length} with the most unprotected of ${data.databases_total}` : data.databases_total}</span></h3>
        <${Groups} rows=${snapshot.databases} snapshot=${snapshot} />
        <h3>By owner <span class="count">${data.owners.length < data.owners_total ? `the ${data.owners.length} with the most unprotected of ${data.owners_total}` : data.owners_total}</span></h3>
        <${Groups} rows=${data.owners} owners=${true} snapshot=${snapshot} />
        ${snapshot.downstream.length
          ? html`<h3>Unprotected below protected columns</h3>
            <${ColumnTable} list="downstream" columns=${snapshot.downstream} />
            ${totals.downstream > snapshot.downstream.length ? html`<p><a href=${listHref('downstream')}>All ${totals.downstream}</a></p>` : null}`
          : null}`
      : null}
  </section>`;
}

function ColumnTable({ list, columns }) {
  const downstream = list === 'downstream';
  return html`<table class="grid" data-testid="coverage-columns">
    <thead><tr><th>column</th><th>tag</th><th>database</th><th>owner</th>${downstream ? html`<th>status</th><th>from protected</th>` : null}</tr></thead>
    <tbody>${columns.map(
      (c) => html`<tr data-column=${c.column}>
        <td><a href=${href('column', c.column)}>${c.column}</a></td><td><span class="chip">${c.tag}</span></td>
        <td>${c.database}</td><td>${c.owner}</td>
        ${downstream
          ? html`<td>${c.status === 'uncovered' ? 'no rule' : 'not yet protected'}</td>
            <td>${c.roots.map((root) => html`<a href=${href('column', root)}>${root}</a> `)}</td>`
          : null}
      </tr>`,
    )}</tbody>
  </table>`;
}

// One of the snapshot's lists (#/coverage/unprotected?database=ods&owner=crm), a page at a time.
export function CoverageList({ list, params }) {
  const [columns, setColumns] = useState([]);
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const where = { database: params.database || '', owner: params.owner || '' };
  const load = async (offset) => {
    try {
      const answer = await get(`/coverage/columns${qs({ list, ...where, offset, limit: 100 })}`);
      setColumns((old) => (offset ? [...old, ...answer.columns] : answer.columns));
      setPage(answer);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    load(0);
  }, [list, where.database, where.owner]);
  const filters = [where.database && `database ${where.database}`, where.owner && `owner ${where.owner}`].filter(Boolean);
  return html`<section class="coverage-list">
    <h2>${LISTS[list] || list}${filters.length ? ` · ${filters.join(' · ')}` : ''}</h2>
    <p><a href="#/">Coverage</a></p>
    <${ErrorBox} error=${error} />
    ${page
      ? html`<p class="facts" data-testid="coverage-list-total">${page.total} columns · snapshot ${page.snapshot}</p>
        ${columns.length ? html`<${ColumnTable} list=${list} columns=${columns} />` : html`<p>None.</p>`}
        ${columns.length < page.total ? html`<button onClick=${() => load(columns.length)}>More</button>` : null}`
      : null}
  </section>`;
}
