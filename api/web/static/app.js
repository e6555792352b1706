// The Watershed steward UI: hash routes, one preact component per page.

import { html, render, useState, useEffect, useRef, useCallback } from './vendor/htm-preact.js';
import { api, get, qs, enc, setUnauthorizedHandler } from './api.js';
import { LineageGraph, warmUp } from './graph.js';
import { TaskSql } from './edge_sql.js';
import { DiscoveryPage, DiscoveryPanel } from './discovery.js';
import { ImpactPage } from './impact.js';
import { Dashboard, CoverageList } from './dashboard.js';
import { ChangePreview, proposal } from './preview.js';
import { AuditPage, NodeHistory, mayReadTrail } from './audit.js';
import { href, canChange, isSteward, ErrorBox, Select, usePages } from './ui.js';
import { SsoLogin, signOut } from './sso.js';
import { MetadataPanel } from './metadata.js';
import { WebhooksPage, mayManageWebhooks } from './webhooks.js';

// What tests and the benchmark read: the last lineage drawing's timings.
window.__watershed = { renderCount: 0, lastRenderMs: null, lastFetchMs: null, lastNodes: 0, lastEdges: 0 };

// ------------------------------------------------------------------ routing and session

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] || 'home', args: parts.slice(1), params: Object.fromEntries(new URLSearchParams(query)) };
}

export function go(page, ...args) {
  location.hash = href(page, ...args);
}

// ------------------------------------------------------------------ small shared pieces

function TagChips({ tags }) {
  const entries = Array.isArray(tags) ? tags.map((t) => [t.key, t.values]) : Object.entries(tags || {});
  return html`${entries.map(
    ([key, values]) => html`<span class="chip" data-tag=${key}>${key}${values && values.length ? `=${values.join(',')}` : ''}</span>`,
  )}`;
}

// Loads `path` whenever it changes; returns [data, error, reload].
function useGet(path) {
  const [state, setState] = useState({ data: null, error: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    if (!path) return undefined;
    setState((s) => ({ data: s.data, error: null }));
    get(path).then(
      (data) => live && setState({ data, error: null }),
      (error) => live && setState({ data: null, error }),
    );
    return () => {
      live = false;
    };
  }, [path, tick]);
  return [state.data, state.error, () => setTick((t) => t + 1)];
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // not a secure context: fall back to a hidden text area
    const area = document.createElement('textarea');
    area.value = text;
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    return ok;
  }
}

function CopyBlock({ text, name }) {
  const [copied, setCopied] = useState(false);
  return html`<div class="copy-block">
    <button class="copy" data-testid="copy-${name}" onClick=${async () => setCopied(await copyText(text))}>
      ${copied ? 'Copied' : 'Copy'}
    </button>
    <pre data-testid=${name}>${text}</pre>
  </div>`;
}

function bytes(n) {
  if (n === null || n === undefined) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let value = n;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i += 1;
  }
  return `${value.toFixed(i ? 1 : 0)} ${units[i]}`;
}

const same = (values) => values.map((v) => [v, v]);

// ------------------------------------------------------------------ login

function Login({ onLogin }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      onLogin(await api('POST', '/session', { token: token.trim() }));
    } catch (e) {
      setError(e);
    }
  };
  return html`<form class="login" onSubmit=${submit}>
    <h1>Watershed</h1>
    <label>API token <input type="password" name="token" autocomplete="off" value=${token}
      onInput=${(e) => setToken(e.target.value)} required /></label>
    <button type="submit">Log in</button>
    <${ErrorBox} error=${error} />
    <${SsoLogin} />
  </form>`;
}

// ------------------------------------------------------------------ search

// Hits come ranked by the API (exact name, prefix, substring; roots and tagged first) with their
// total; a table holding a sensitive column shows its family (pii) as a badge.
function Search({ params }) {
  const [q, setQ] = useState(params.q || '');
  const [kind, setKind] = useState(params.kind || '');
  const [db, setDb] = useState(params.db || '');
  const [tag, setTag] = useState(params.tag || '');
  const [items, setItems] = useState([]);
  const [next, setNext] = useState(null);
  const [first, setFirst] = useState(null);
  const [error, setError] = useState(null);

  const load = async (cursor) => {
    setError(null);
    try {
      const page = await get(`/search${qs({ q, kind, db, tag: tag ? tag.split(/\s+/) : [], limit: 50, cursor })}`);
      setItems((old) => (cursor ? [...old, ...page.items] : page.items));
      setNext(page.next_cursor);
      if (!cursor) setFirst(page);
    } catch (e) {
      // the error alone: not "Nothing found." beside it
      setFirst(null);
      setItems([]);
      setNext(null);
      setError(e);
    }
  };
  useEffect(() => {
    if (params.q || params.tag || params.db) load();
  }, []);
  const submit = (event) => {
    event.preventDefault();
    history.replaceState(null, '', `#/search${qs({ q, kind, db, tag })}`);
    load();
  };
  return html`<section>
    <h2>Search</h2>
    <form class="row" onSubmit=${submit}>
      <input name="q" placeholder="table or column (prefix or part of the name)" value=${q} onInput=${(e) => setQ(e.target.value)} />
      <${Select} name="kind" value=${kind} onChange=${setKind}
        options=${[['', 'tables and columns'], ['table', 'tables'], ['column', 'columns']]} />
      <input name="db" placeholder="database, e.g. ods" value=${db} onInput=${(e) => setDb(e.target.value)} />
      <input name="tag" placeholder="tag filter, e.g. pii>=L3" value=${tag} onInput=${(e) => setTag(e.target.value)} />
      <button type="submit">Search</button>
    </form>
    <${ErrorBox} error=${error} />
    ${first && !items.length ? html`<p data-testid="search-none">Nothing found.</p>` : null}
    ${first && items.length
      ? html`<p class="facts" data-testid="search-count">${first.approximate ? `Nothing matches ${q.trim()}; names one edit away: ` : ''}${first.total.toLocaleString('en')}${first.total_bounded ? '+' : ''} ${first.total === 1 ? 'result' : 'results'}</p>`
      : null}
    ${items.length
      ? html`<table class="grid" data-testid="search-results">
          <thead><tr><th>id</th><th>type</th><th>tags</th><th>description</th></tr></thead>
          <tbody>${items.map(
            (hit) => html`<tr data-id=${hit.id}>
              <td><a href=${href(hit.label === 'Column' ? 'column' : 'table', hit.id)}>${hit.id}</a>
                ${(hit.sensitive || []).map((family) => html` <span class="badge" data-testid="sensitive" title=${`a column of this table has ${family}`}>${family}</span>`)}</td>
              <td>${hit.type || ''}</td><td><${TagChips} tags=${hit.tags} /></td>
              <td class="search-description">${hit.description || ''}</td>
            </tr>`,
          )}</tbody>
        </table>`
      : null}
    ${next ? html`<button onClick=${() => load(next)}>More</button>` : null}
  </section>`;
}

// ------------------------------------------------------------------ table

const canApplyProtection = (me, tableId) =>
  !!me && me.role === 'admin' && (me.databases === null || me.databases === undefined || me.databases.includes(tableId.split('.')[0]));

// An apply of this table's plan, followed until it ends (GET /protect/runs/{id} twice a second).
function ProtectApply({ tableId, onDone }) {
  const [run, setRun] = useState(null);
  const [error, setError] = useState(null);
  const running = !!run && run.status === 'running';
  useEffect(() => {
    if (!running) return undefined;
    const timer = setInterval(async () => {
      try {
        const now = await get(`/protect/runs/${enc(run.id)}`);
        setRun(now);
        if (now.status !== 'running') onDone();
      } catch (e) {
        setError(e);
      }
    }, 500);
    return () => clearInterval(timer);
  }, [running, run && run.id]);
  const start = async () => {
    setError(null);
    try {
      setRun(await api('POST', '/protect/apply', { tables: [tableId] }));
    } catch (e) {
      setError(e);
    }
  };
  const planned = run && run.files_planned;
  return html`<div class="protect-apply">
    <button data-testid="apply-protection" onClick=${start} disabled=${running}>Apply protection</button>
    <${ErrorBox} error=${error} />
    ${run
      ? html`<p class="facts" data-testid="protect-run" data-status=${run.status}>run ${run.id}:${' '}
          <span class=${`status ${run.status}`}>${run.status}</span> · files ${run.files_finished}/${planned ?? '?'}${' '}
          (${run.files_done} rewritten, ${run.files_unchanged} unchanged, ${bytes(run.bytes_rewritten)})
          ${running ? html` <progress max=${Math.max(planned || 0, 1)} value=${run.files_finished}></progress>` : null}</p>
        ${(run.errors || []).some((p) => p.error.startsWith('DDL not run'))
          ? html`<p class="facts" data-testid="ddl-not-run">Files rewritten here; the table's options (the DDL above) are set
              by <code>watershed protect apply</code> on Spark.</p>`
          : null}
        ${(run.skipped || [])
          .concat((run.errors || []).filter((p) => !p.error.startsWith('DDL not run')))
          .map((p) => html`<p class="error">${p.path}: ${p.error}</p>`)}`
      : null}
  </div>`;
}

function ProtectionSection({ me, table, onChanged }) {
  const p = table.protection;
  if (!p) return null;
  if (p.status === 'no_policy') {
    return html`<div data-testid="protection"><h3>Protection</h3><p class="facts">The tag policy has no protection rules.</p></div>`;
  }
  const columns = p.columns || [];
  return html`<div data-testid="protection" data-status=${p.status}>
    <h3>Protection</h3>
    <p class="facts">status <b data-testid="protection-status">${p.status}</b> · encrypted: ${p.encrypted_columns.join(', ') || 'none'}${' '}
      · pending: ${p.pending_columns.join(', ') || 'none'} · ${p.files_recorded} files recorded as protected</p>
    ${columns.length
      ? html`<table class="grid" data-testid="protection-columns">
          <thead><tr><th>column</th><th>state</th><th>key</th><th>version</th><th>mask</th><th>since run</th><th>policy asks</th><th>why</th></tr></thead>
          <tbody>${columns.map(
            (c) => html`<tr data-column=${c.name} data-state=${c.state}>
              <td>${c.name}</td><td><span class=${`protect ${c.state}`}>${c.state}</span></td>
              <td>${c.key || ''}</td><td>${(c.versions || []).join(', ')}</td><td>${c.mask || ''}</td>
              <td>${c.since_run || ''}</td><td>${c.want ? `${c.want.key} / ${c.want.mask}` : 'nothing'}${c.options_set ? ' (options set)' : ''}</td>
              <td>${c.tag || ''} ${c.why || ''}</td></tr>`,
          )}</tbody>
        </table>`
      : html`<p>No column needs protection.</p>`}
    ${(p.problems || []).map((problem) => html`<p class="error">${problem}</p>`)}
    ${p.ddl.length
      ? html`<p class="facts">The table's options, set by <code>watershed protect apply</code> on Spark:</p>
          <${CopyBlock} text=${p.ddl.join(';\n') + ';'} name="protect-ddl" />`
      : null}
    ${canApplyProtection(me, table.id) && p.status === 'pending'
      ? html`<${ProtectApply} tableId=${table.id} onDone=${onChanged} />`
      : null}
  </div>`;
}

function TablePage({ me, id }) {
  const [table, error, reload] = useGet(`/tables/${enc(id)}`);
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!table) return html`<p class="loading">Loading…</p>`;
  return html`<section>
    <h2>Table ${table.id}</h2>
    <p class="facts">layer ${table.layer || '–'} · owner ${table.owner || '–'} · format ${table.format || '–'} ·${' '}
      location <span data-testid="table-location">${table.location || '–'}</span> ·${' '}
      TTL ${table.ttl_days ?? '–'} days · <a href=${href('column', table.id)}>table lineage</a> ·${' '}
      <a data-testid="impact-link" href=${href('impact', table.id)}>Impact</a></p>
    <p><${TagChips} tags=${table.tags} /></p>
    <${MetadataPanel} me=${me} nodeId=${table.id} />
    <table class="grid">
      <thead><tr><th>column</th><th>type</th><th>tags</th><th>recommended TTL (days)</th><th>description</th></tr></thead>
      <tbody>${(table.columns || []).map(
        (c) => html`<tr><td><a href=${href('column', c.id)}>${c.name}</a></td><td>${c.type}</td>
          <td><${TagChips} tags=${c.tags} /></td><td>${c.ttl_days_recommended ?? ''}</td><td>${c.description || ''}</td></tr>`,
      )}</tbody>
    </table>
    <${ProtectionSection} me=${me} table=${table} onChanged=${reload} />
    <h3>DDL</h3>
    ${table.ddl ? html`<${CopyBlock} text=${table.ddl} name="ddl" />` : html`<p>No DDL: a column has no Spark type.</p>`}
    <${NodeHistory} me=${me} nodeId=${table.id} watch=${table} />
  </section>`;
}

function DdlPage({ id }) {
  const [data, error] = useGet(`/tables/${enc(id)}/ddl`);
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!data) return html`<p class="loading">Loading…</p>`;
  return html`<section><h2>DDL of <a href=${href('table', id)}>${id}</a></h2><${CopyBlock} text=${data.ddl} name="ddl" /></section>`;
}

// ------------------------------------------------------------------ tags of a node (column page side bar)

function TagEditor({ me, nodeId, onChanged }) {
  const [tags, error, reload] = useGet(`/nodes/${enc(nodeId)}/tags`);
  const [key, setKey] = useState('');
  const [values, setValues] = useState('');
  const [actionError, setActionError] = useState(null);
  const [started, setStarted] = useState(null);
  // a set or block waits here, previewed, until the steward confirms it
  const [proposed, setProposed] = useState(null);
  const steward = canChange(me, nodeId);
  const act = async (method, path, body) => {
    setActionError(null);
    try {
      await api(method, `/nodes/${enc(nodeId)}${path}`, body);
      reload();
      onChanged && onChanged();
    } catch (e) {
      setActionError(e);
    }
  };
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!tags) return html`<p class="loading">Loading tags…</p>`;
  const isBlock = (entry) => /block/i.test(entry.type);
  const blocks = tags.set_here.filter(isBlock);
  const manual = new Set(tags.set_here.filter((entry) => !isBlock(entry) && entry.origin === 'manual').map((entry) => entry.key));
  // What was set here shows at once: the resulting tags change only when a propagation run
  // recomputes the node, so a tag set here that they do not hold yet (or a block of a tag they
  // still hold) is listed as pending, with a button to run.
  const blocked = new Set(blocks.map((b) => b.key));
  const holds = new Map(tags.tags.map((tag) => [tag.key, [...tag.values].sort().join(',')]));
  const own = new Map();
  for (const entry of tags.set_here.filter((e) => !isBlock(e))) {
    const mine = own.get(entry.key) || { values: [], manual: [], by: entry.by };
    (entry.origin === 'manual' ? mine.manual : mine.values).push(String(entry.value));
    if (entry.origin === 'manual') mine.by = entry.by;
    own.set(entry.key, mine);
  }
  const pending = [...own]
    .map(([key, mine]) => ({ key, by: mine.by, values: (mine.manual.length ? mine.manual : mine.values).sort() }))
    .filter((p) => !blocked.has(p.key) && holds.get(p.key) !== p.values.join(','));
  const pendingBlocks = blocks.filter((b) => holds.has(b.key));
  const runNow = async () => {
    setActionError(null);
    try {
      const run = await api('POST', '/propagation/runs', { full: false });
      setStarted(run.run_id);
    } catch (e) {
      setActionError(e);
    }
  };
  return html`<div class="tags" data-testid="tags">
    <h3>Tags</h3>
    ${tags.tags.length || pending.length ? null : html`<p>No tags.</p>`}
    <ul>${tags.tags.map(
      (tag) => html`<li data-tag=${tag.key}>
        <b>${tag.key}</b> = ${tag.values.join(', ')} <span class="muted">(${tag.origin}${tag.hops ? `, ${tag.hops} hops` : ''})</span>
        <a href=${href('why', nodeId, tag.key)} data-testid="why-${tag.key}">why?</a>
        ${steward && manual.has(tag.key)
          ? html`<button class="small" data-testid="unset-${tag.key}" onClick=${() => act('DELETE', `/tags/${enc(tag.key)}`)}>unset</button>`
          : null}
        ${steward
          ? html`<button class="small" data-testid="block-${tag.key}" onClick=${() => setProposed(proposal(nodeId, 'block', tag.key))}>block</button>`
          : null}
      </li>`,
    )}</ul>
    ${pending.length
      ? html`<h4>Set here, pending</h4><ul>${pending.map(
          (p) => html`<li data-pending=${p.key}><b>${p.key}</b> = ${p.values.join(', ')} <span class="muted">(set here${p.by ? ` by ${p.by}` : ''}; pending until the next propagation run)</span>
            ${steward && manual.has(p.key)
              ? html`<button class="small" data-testid="unset-${p.key}" onClick=${() => act('DELETE', `/tags/${enc(p.key)}`)}>unset</button>`
              : null}</li>`,
        )}</ul>`
      : null}
    ${blocks.length
      ? html`<h4>Blocked here</h4><ul>${blocks.map(
          (b) => html`<li data-block=${b.key}>${b.key} <span class="muted">${b.by ? `by ${b.by}` : ''}${holds.has(b.key) ? ' (pending until the next propagation run)' : ''}</span>
            ${steward
              ? html`<button class="small" data-testid="unblock-${b.key}" onClick=${() => act('DELETE', `/blocks/${enc(b.key)}`)}>unblock</button>`
              : null}</li>`,
        )}</ul>`
      : null}
    ${steward && (pending.length || pendingBlocks.length)
      ? html`<p class="row"><button class="small" data-testid="run-propagation" onClick=${runNow}>Run propagation</button>
          ${started
            ? html`<span class="ok" data-testid="run-started">Run <a href="#/runs">${started}</a> started; reload when it is done.</span>`
            : null}</p>`
      : null}
    ${steward
      ? html`<form class="row" data-testid="set-tag" onSubmit=${(e) => {
          e.preventDefault();
          setProposed(proposal(nodeId, 'set', key.trim(), values.split(',').map((v) => v.trim()).filter(Boolean)));
        }}>
          <input placeholder="key" value=${key} onInput=${(e) => setKey(e.target.value)} required size="8" />
          <input placeholder="values, comma separated" value=${values} onInput=${(e) => setValues(e.target.value)} size="14" />
          <button type="submit">Set tag</button>
        </form>`
      : null}
    ${proposed
      ? html`<${ChangePreview} proposed=${proposed} onCancel=${() => setProposed(null)} onConfirm=${() => {
          setProposed(null);
          act(proposed.method, proposed.path, proposed.body);
        }} />`
      : null}
    <${ErrorBox} error=${actionError} />
  </div>`;
}

// ------------------------------------------------------------------ column page with its lineage graph

function Selection({ selected }) {
  const [edges, setEdges] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setEdges(null);
    setError(null);
    if (!selected || selected.type !== 'edge' || selected.edge.columnEdges) return;
    const { source, target } = selected.edge;
    get(`/edges${qs({ source, target })}`).then(setEdges, setError);
  }, [selected]);
  if (!selected) return html`<p class="muted">Click a node or an edge; double-click a node to expand it one hop.</p>`;
  if (selected.type === 'node') {
    const node = selected.node;
    if (node.isTable) {
      return html`<div data-testid="selected-node"><h3>${node.table}</h3><p>${node.columns} columns shown</p>
        <p><${TagChips} tags=${node.tags} /></p><a href=${href('table', node.table)}>open table</a></div>`;
    }
    return html`<div data-testid="selected-node"><h3>${node.id}</h3><p><${TagChips} tags=${node.tags} /></p>
      <p><a href=${href('column', node.id)}>open column</a> · <button class="small" onClick=${selected.expand}>expand one hop</button></p></div>`;
  }
  const edge = selected.edge;
  if (edge.columnEdges) {
    return html`<div data-testid="selected-edge"><h3>${edge.source.replace(/^table:/, '')} → ${edge.target.replace(/^table:/, '')}</h3>
      <ul>${edge.columnEdges.map((e) => html`<li>${e.source} → ${e.target} <span class="muted">${e.kind} ${e.task || ''}</span></li>`)}</ul></div>`;
  }
  return html`<div data-testid="selected-edge">
    <h3>${edge.source} → ${edge.target}</h3>
    <${ErrorBox} error=${error} />
    ${edges === null && !error ? html`<p class="loading">Loading…</p>` : null}
    ${(edges || []).map(
      (detail) => html`<div class="edge-detail">
        <p><b>${detail.type}</b> · kind <b data-testid="edge-kind">${detail.kind || '–'}</b>
          ${detail.functions && detail.functions.length ? html` · functions ${detail.functions.join(', ')}` : null}</p>
        ${detail.task
          ? html`<p>task <b data-testid="edge-task">${detail.task.id}</b> · ${detail.task.dialect || 'SQL'}${detail.task.owner ? ` · owner ${detail.task.owner}` : ''}</p>
              ${detail.task.sql
                ? html`<${TaskSql} sql=${detail.task.sql} spans=${detail.expressions} />`
                : html`<p class="muted" data-testid="edge-sql-missing">The task's SQL is not stored.</p>`}`
          : null}
      </div>`,
    )}
  </div>`;
}

function LineagePanel({ nodeId, params }) {
  const box = useRef(null);
  const graph = useRef(null);
  const [direction, setDirection] = useState(params.direction || 'both');
  const [depth, setDepth] = useState(Number(params.depth || 3));
  const [limit, setLimit] = useState(Number(params.limit || 500));
  const [level, setLevel] = useState(params.level || 'column');
  const [info, setInfo] = useState(null);
  const [error, setError] = useState(null);
  const [selected, setSelected] = useState(null);
  const [note, setNote] = useState(null); // what the last expansion found, when it found nothing
  const [, redraw] = useState(0);

  // `since`: when the data arrived, if the drawing had to wait for anything after that
  const draw = useCallback(async (since) => {
    const result = await graph.current.render();
    if (since !== undefined) result.ms = performance.now() - since;
    Object.assign(window.__watershed, {
      lastRenderMs: result.ms,
      lastNodes: result.nodes,
      lastEdges: result.edges,
      renderCount: window.__watershed.renderCount + 1,
    });
    setInfo((old) => ({ ...old, ...result }));
    redraw((n) => n + 1);
  }, []);

  const expand = useCallback(async (node) => {
    if (!node) return;
    if (node.isTable) {
      // a collapsed table opens to its columns (and closes again)
      graph.current.toggleTable(node.table);
      await draw();
      return;
    }
    try {
      const path = `/lineage/${enc(node.id)}${qs({ direction, depth: 1, limit, level })}`;
      const added = graph.current.merge(await get(path));
      const where = direction === 'both' ? 'upstream or downstream' : direction;
      setNote(added ? null : `Nothing further ${where} of ${node.id}.`);
      await draw();
    } catch (e) {
      setError(e);
    }
  }, [direction, limit, level]);

  useEffect(() => {
    graph.current = new LineageGraph(box.current, {
      onSelectNode: (node) => setSelected({ type: 'node', node, expand: () => expand(node) }),
      onSelectEdge: (edge) => setSelected({ type: 'edge', edge }),
      onExpand: (node) => expand(node),
    });
    window.__watershed.graph = graph.current; // tests find nodes and edges on screen through it
    return () => graph.current.destroy();
  }, []);

  useEffect(() => {
    // keeps the double-click handler on the current query settings
    graph.current.handlers.onExpand = (node) => expand(node);
    graph.current.handlers.onSelectNode = (node) => setSelected({ type: 'node', node, expand: () => expand(node) });
  }, [expand]);

  useEffect(() => {
    let live = true;
    setError(null);
    setSelected(null);
    setNote(null);
    const started = performance.now();
    const warm = warmUp();
    get(`/lineage/${enc(nodeId)}${qs({ direction, depth, limit, level })}`).then(
      async (view) => {
        const arrived = performance.now();
        window.__watershed.lastFetchMs = arrived - started;
        await warm;
        if (!live) return;
        graph.current.setData(view);
        setInfo({ truncated: view.truncated });
        await draw(arrived);
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [nodeId, direction, depth, limit, level]);

  const g = graph.current;
  const toggleKind = (kind) => {
    if (g.hiddenKinds.has(kind)) g.hiddenKinds.delete(kind);
    else g.hiddenKinds.add(kind);
    draw();
  };
  return html`<div class="lineage">
    <div class="toolbar">
      <label>direction <${Select} name="direction" value=${direction} onChange=${setDirection}
        options=${same(['upstream', 'downstream', 'both'])} /></label>
      <label>hops <input name="depth" type="number" min="1" max="10" value=${depth}
        onChange=${(e) => setDepth(Math.max(1, Math.min(10, Number(e.target.value) || 1)))} /></label>
      <label>level <${Select} name="level" value=${level} onChange=${setLevel} options=${same(['column', 'table'])} /></label>
      ${g
        ? html`<label>colour by <${Select} name="colour" value=${g.colourKey} options=${[['', '—'], ...same(g.tagKeys())]}
            onChange=${(key) => {
              g.colourKey = key;
              draw();
            }} /></label>
          <label><input type="checkbox" name="collapse" checked=${g.collapsed} onChange=${(e) => {
            g.collapsed = e.target.checked;
            setSelected(null);
            draw();
          }} /> collapse by table</label>
          <span class="kinds">${g.kinds().map(
            (kind) => html`<label><input type="checkbox" data-kind=${kind} checked=${!g.hiddenKinds.has(kind)}
              onChange=${() => toggleKind(kind)} />${kind}</label>`,
          )}</span>`
        : null}
      <button class="small" title="zoom in" onClick=${() => g.zoom(1.25)}>+</button>
      <button class="small" title="zoom out" onClick=${() => g.zoom(0.8)}>−</button>
      <button class="small" onClick=${() => g.fit()}>fit</button>
    </div>
    <${ErrorBox} error=${error} />
    ${note ? html`<p class="warn" role="status" data-testid="graph-note">${note}</p>` : null}
    ${info
      ? html`<p class="facts" data-testid="graph-info">${info.nodes ?? '…'} nodes, ${info.edges ?? '…'} edges
          ${info.ms !== undefined ? html` · drawn in <span data-testid="render-ms">${Math.round(info.ms)}</span> ms` : null}
          ${info.truncated
            ? html` · <span class="warn">truncated</span> <button class="small" data-testid="show-more"
                disabled=${limit >= 5000} onClick=${() => setLimit(Math.min(5000, limit * 2))}>show more</button>`
            : null}
          ${(info.legend || []).map((item) => html` <span class="chip" style=${`border-color:${item.colour}`}>${item.value}</span>`)}</p>`
      : null}
    <div class="graph-and-side">
      <div class="graph" ref=${box} data-testid="graph"></div>
      <aside class="side"><${Selection} selected=${selected} /></aside>
    </div>
  </div>`;
}

function ColumnPage({ me, id, params }) {
  const isColumn = id.split('.').length >= 3;
  const [column, error, reload] = useGet(isColumn ? `/columns/${enc(id)}` : null);
  // a decision in the discovery panel sets seeds: the tag editor reads them again
  const [tagsVersion, setTagsVersion] = useState(0);
  const discovered = () => {
    setTagsVersion((v) => v + 1);
    reload();
  };
  return html`<section class="column-page">
    <div class="column-head">
      <h2>${isColumn ? 'Column' : 'Table'} ${id}</h2>
      ${column
        ? html`<p class="facts">type ${column.type || '–'} · table <a href=${href('table', column.table)}>${column.table}</a>
            ${column.ttl ? html` · <span data-testid="column-ttl">${ttlAdviceText(column.ttl)}</span>` : null}
            · <a data-testid="impact-link" href=${href('impact', id)}>Impact</a></p>`
        : null}
      <${ErrorBox} error=${error} />
    </div>
    <div class="column-body">
      ${isColumn
        ? html`<div class="column-side"><${MetadataPanel} me=${me} nodeId=${id} />
            <${TagEditor} me=${me} nodeId=${id} onChanged=${reload} key=${tagsVersion} />
            <${DiscoveryPanel} me=${me} nodeId=${id} onChanged=${discovered} /></div>`
        : null}
      <${LineagePanel} nodeId=${id} params=${isColumn ? params : { level: 'table', ...params }} key=${id} />
    </div>
    <${NodeHistory} me=${me} nodeId=${id} watch=${column} />
  </section>`;
}

// ------------------------------------------------------------------ why-path of a tag

function WhyStep({ step, me, keyName, onBlock, depth }) {
  return html`<li class="why-step" data-node=${step.node}>
    ${step.via
      ? html`<span class="via">← ${step.via.kind} via task ${step.via.task || '–'} (${step.via.rule})</span> `
      : null}
    <a href=${href('column', step.node)}>${step.node}</a>
    ${step.values ? html` = ${step.values.join(', ')}` : null}
    <span class=${`origin ${step.origin}`}> ${step.origin}</span>
    ${canChange(me, step.node)
      ? html` <button class="small" data-testid=${depth === 0 ? 'block-here' : null} onClick=${() => onBlock(step.node)}>block ${keyName} here</button>`
      : null}
    ${step.sources && step.sources.length
      ? html`<ul>${step.sources.map((s) => html`<${WhyStep} step=${s} me=${me} keyName=${keyName} onBlock=${onBlock} depth=${depth + 1} />`)}</ul>`
      : null}
  </li>`;
}

function WhyPage({ me, nodeId, keyName }) {
  const [why, error, reload] = useGet(`/nodes/${enc(nodeId)}/tags/${enc(keyName)}/why${qs({ max_paths: 20 })}`);
  const [message, setMessage] = useState(null);
  const [actionError, setActionError] = useState(null);
  const block = async (node) => {
    setActionError(null);
    try {
      await api('PUT', `/nodes/${enc(node)}/blocks/${enc(keyName)}`);
      setMessage(html`Blocked ${keyName} on ${node}. <a href="#/runs">Start a propagation run</a> to apply it downstream.`);
      reload();
    } catch (e) {
      setActionError(e);
    }
  };
  return html`<section>
    <h2>Why does <a href=${href('column', nodeId)}>${nodeId}</a> have <span class="chip">${keyName}</span>?</h2>
    <${ErrorBox} error=${error} />
    ${message ? html`<p class="ok" data-testid="message">${message}</p>` : null}
    <${ErrorBox} error=${actionError} />
    ${why
      ? html`<p class="facts">${why.paths} path${why.paths === 1 ? '' : 's'}${why.stopped_at_max_paths ? ' (stopped at the limit)' : ''}</p>
          <ul class="why" data-testid="why-tree"><${WhyStep} step=${why.tree} me=${me} keyName=${keyName} onBlock=${block} depth=${0} /></ul>`
      : null}
  </section>`;
}

// ------------------------------------------------------------------ propagation runs with live progress

const ACTIVE = new Set(['starting', 'running']);

function RunsPage({ me }) {
  const [runs, setRuns] = useState(null);
  const [error, setError] = useState(null);
  const [full, setFull] = useState(false);
  const load = useCallback(() => get(`/propagation/runs${qs({ limit: 20 })}`).then((page) => setRuns(page.items), setError), []);
  useEffect(() => {
    load();
  }, []);
  const active = (runs || []).some((run) => ACTIVE.has(run.status));
  useEffect(() => {
    // every second while a run is under way; now and then otherwise, for runs started elsewhere
    const timer = setInterval(load, active ? 1000 : 10000);
    return () => clearInterval(timer);
  }, [active]);
  const start = async () => {
    setError(null);
    try {
      const run = await api('POST', '/propagation/runs', { full });
      setRuns((old) => [run, ...(old || []).filter((r) => r.run_id !== run.run_id)]);
    } catch (e) {
      setError(e);
    }
  };
  const cancel = async (run) => {
    try {
      await api('POST', `/propagation/runs/${enc(run.run_id)}/cancel`);
      load();
    } catch (e) {
      setError(e);
    }
  };
  return html`<section>
    <h2>Propagation runs</h2>
    ${isSteward(me)
      ? html`<p class="row"><button data-testid="start-run" onClick=${start} disabled=${active}>Start propagation</button>
          <label><input type="checkbox" checked=${full} onChange=${(e) => setFull(e.target.checked)} /> full run</label></p>`
      : null}
    <${ErrorBox} error=${error} />
    ${runs === null ? html`<p class="loading">Loading…</p>` : null}
    ${runs && !runs.length ? html`<p>No runs yet.</p>` : null}
    ${(runs || []).map((run) => {
      const nodes = (run.layers || []).reduce((n, l) => n + l.nodes, 0);
      const changed = (run.layers || []).reduce((n, l) => n + l.changed, 0);
      return html`<div class="run" data-run=${run.run_id} data-status=${run.status}>
        <p><b>${run.run_id}</b> ${run.mode} · <span class=${`status ${run.status}`} data-testid="run-status">${run.status}</span>${' '}
          · started ${run.started_at}${run.finished_at ? ` · finished ${run.finished_at}` : ''}
          ${isSteward(me) && ACTIVE.has(run.status) ? html` <button class="small" onClick=${() => cancel(run)}>cancel</button>` : null}</p>
        <p class="facts">layer ${run.layer} · frontier ${(run.frontier || []).length} · cone ${run.cone} ·${' '}
          ${nodes} nodes processed · ${changed} tags changed${run.stopped_at_cap ? ' · stopped at the cap' : ''}</p>
        ${ACTIVE.has(run.status) ? html`<progress max=${Math.max(run.cone, nodes, 1)} value=${nodes}></progress>` : null}
        ${run.error ? html`<p class="error">${run.error}</p>` : null}
        ${(run.layers || []).length
          ? html`<details><summary>${run.layers.length} layers</summary><table class="grid">
              <thead><tr><th>layer</th><th>nodes</th><th>changed</th><th>batches</th><th>seconds</th></tr></thead>
              <tbody>${run.layers.map((l) => html`<tr><td>${l.layer}</td><td>${l.nodes}</td><td>${l.changed}</td><td>${l.batches}</td><td>${l.seconds.toFixed(2)}</td></tr>`)}</tbody>
            </table></details>`
          : null}
      </div>`;
    })}
  </section>`;
}

function HarvestRuns() {
  const [page, error] = useGet(`/harvest/runs${qs({ limit: 20 })}`);
  const [open, setOpen] = useState(null);
  const [errors, errorsError] = useGet(open ? `/harvest/runs/${enc(open)}/errors${qs({ limit: 50 })}` : null);
  return html`<section>
    <h2>Harvest runs</h2>
    <${ErrorBox} error=${error} />
    ${page && !page.items.length ? html`<p>No harvest runs recorded.</p>` : null}
    ${page && page.items.length
      ? html`<table class="grid" data-testid="harvest-runs">
          <thead><tr><th>run</th><th>started</th><th>tasks</th><th>loaded</th><th>unchanged</th><th>errors</th><th>seconds</th></tr></thead>
          <tbody>${page.items.map(
            (run) => html`<tr><td>${run.id}</td><td>${run.started_at}</td><td>${run.tasks}</td><td>${run.loaded}</td>
              <td>${run.unchanged}</td>
              <td>${run.errors ? html`<button class="small" onClick=${() => setOpen(run.id)}>${run.errors}</button>` : 0}</td>
              <td>${Number(run.seconds).toFixed(1)}</td></tr>`,
          )}</tbody></table>`
      : null}
    ${open
      ? html`<h3>Errors of ${open}</h3><${ErrorBox} error=${errorsError} />
          <ul data-testid="harvest-errors">${((errors && errors.items) || []).map((e) => html`<li>${e.text}</li>`)}</ul>`
      : null}
  </section>`;
}

// ------------------------------------------------------------------ TTL advice

// Bytes a shorter TTL frees, when the advice carries them (`watershed ttl advise` samples ORC files).
const savingsOf = (advice) => (advice.savings && advice.savings.bytes) || advice.savings_bytes || null;

function evidenceText(entry) {
  if (typeof entry !== 'object' || entry === null) return String(entry);
  const task = entry.task_id || entry.task;
  const window = entry.window_days === null ? 'unbounded' : entry.window_days !== undefined ? `${entry.window_days} days` : '';
  const rest = Object.entries(entry)
    .filter(([key]) => !['task_id', 'task', 'window_days'].includes(key))
    .map(([key, value]) => `${key} ${Array.isArray(value) ? value.join(', ') : JSON.stringify(value)}`);
  return [task && `task ${task}`, window && `reads ${window}`, ...rest].filter(Boolean).join(' · ');
}

// Biggest savings first (bytes freed where the table was sampled, else days of retention cut):
// the API's order; the count is the API's total, not the page.
// A column's stored TTL advice in words (its status alone read "TTL ttl (4 days)").
function ttlAdviceText(ttl) {
  if (ttl.status === 'ttl') return `TTL advice: keep ${ttl.days_recommended} days`;
  if (ttl.status === 'unused') return 'TTL advice: unused (nothing in the warehouse reads it)';
  if (ttl.status === 'keep') return 'TTL advice: keep all (read without a time bound)';
  return `TTL advice: ${ttl.status}`;
}

function TtlPage({ params }) {
  const [table, setTable] = useState(params.table || '');
  const [minSavings, setMinSavings] = useState(params.min_savings || '');
  const [status, setStatus] = useState(params.status || '');
  const [query, setQuery] = useState({ table: params.table, min_savings: params.min_savings, status: params.status });
  const { items, next, first, error, more } = usePages((cursor) => `/ttl/advice${qs({ ...query, limit: 50, cursor })}`, [query]);
  const total = items.reduce((n, item) => n + (savingsOf(item) || 0), 0);
  const count = first ? `${first.total.toLocaleString('en')}${first.total_bounded ? '+' : ''}` : items.length;
  return html`<section>
    <h2>TTL advice</h2>
    <form class="row" onSubmit=${(e) => {
      e.preventDefault();
      setQuery({ table, min_savings: minSavings, status });
    }}>
      <input placeholder="table (db.name)" value=${table} onInput=${(e) => setTable(e.target.value)} />
      <input placeholder="min savings (bytes)" value=${minSavings} onInput=${(e) => setMinSavings(e.target.value)} />
      <${Select} name="status" value=${status} onChange=${setStatus}
        options=${[['', 'every status'], ['ttl', 'ttl: a shorter TTL'], ['unused', 'unused: nothing reads it'], ['keep', 'keep: read unbounded']]} />
      <button type="submit">Filter</button>
    </form>
    <${ErrorBox} error=${error} />
    ${items.length
      ? html`<p class="facts"><span data-testid="ttl-count">${count} columns with advice</span>, biggest savings first${total ? html` · <b data-testid="ttl-savings">${bytes(total)}</b> could be freed by those shown` : ''}</p>`
      : first
        ? html`<p data-testid="ttl-empty">No advice${query.table || query.status || query.min_savings ? ' matches these filters' : ''}.
            A TTL run stores it: run <code>watershed ttl run</code> (the nightly chain runs it too).</p>`
        : null}
    ${items.length
      ? html`<table class="grid" data-testid="ttl-advice">
          <thead><tr><th>column</th><th>status</th><th>recommended TTL (days)</th><th>days cut</th><th>savings</th><th>evidence</th></tr></thead>
          <tbody>${items.map(
            (a) => html`<tr data-column=${a.column}><td><a href=${href('column', a.column)}>${a.column}</a></td><td>${a.status}</td>
              <td>${a.ttl_days_recommended ?? a.ttl_days ?? ''}</td><td>${a.days_cut ?? '–'}</td><td>${savingsOf(a) ? bytes(savingsOf(a)) : '–'}</td>
              <td class="evidence">${(a.read_outside_by || []).length ? html`<div>read outside the warehouse by ${a.read_outside_by.join(', ')}</div>` : null}${(a.evidence || []).map((e) => html`<div>${evidenceText(e)}</div>`)}</td></tr>`,
          )}</tbody></table>`
      : null}
    ${next ? html`<button onClick=${more}>More</button>` : null}
  </section>`;
}

// ------------------------------------------------------------------ the shell

function Nav({ me, onLogout }) {
  return html`<header class="nav">
    <a class="brand" href="#/">Watershed</a>
    <a href="#/">Coverage</a><a href="#/search">Search</a><a href="#/runs">Runs</a><a href="#/ttl">TTL advice</a><a href="#/discovery">Discovery</a>${mayReadTrail(me) ? html`<a href="#/audit">Audit</a>` : null}${mayManageWebhooks(me) ? html`<a href="#/webhooks">Webhooks</a>` : null}
    <span class="me" data-testid="me">${me.name} · <b data-testid="role">${me.role}</b>${me.databases ? ` (${me.databases.join(', ')})` : ''}</span>
    <button class="small" onClick=${onLogout}>Log out</button>
  </header>`;
}

function App() {
  const [me, setMe] = useState(undefined);
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const onHash = () => setRoute(parseHash());
    window.addEventListener('hashchange', onHash);
    setUnauthorizedHandler(() => setMe(null));
    get('/me').then(setMe, () => setMe(null));
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  if (me === undefined) return html`<p class="loading">Loading…</p>`;
  if (me === null) return html`<${Login} onLogin=${(who) => setMe(who)} />`;
  const logout = async () => {
    try {
      await signOut();
    } finally {
      setMe(null);
    }
  };
  const { page, args, params } = route;
  let body;
  if (page === 'table') body = html`<${TablePage} me=${me} id=${args[0]} key=${args[0]} />`;
  else if (page === 'ddl') body = html`<${DdlPage} id=${args[0]} key=${args[0]} />`;
  else if (page === 'column') body = html`<${ColumnPage} me=${me} id=${args[0]} params=${params} key=${location.hash} />`;
  else if (page === 'why') body = html`<${WhyPage} me=${me} nodeId=${args[0]} keyName=${args[1]} key=${location.hash} />`;
  else if (page === 'runs') body = html`<${RunsPage} me=${me} /><${HarvestRuns} />`;
  else if (page === 'ttl') body = html`<${TtlPage} params=${params} />`;
  else if (page === 'discovery') body = html`<${DiscoveryPage} me=${me} />`;
  else if (page === 'impact') body = html`<${ImpactPage} id=${args[0]} params=${params} key=${location.hash} />`;
  else if (page === 'audit') body = html`<${AuditPage} me=${me} params=${params} key=${location.hash} />`;
  else if (page === 'webhooks') body = html`<${WebhooksPage} me=${me} />`;
  else if (page === 'home') body = html`<${Dashboard} me=${me} />`;
  else if (page === 'coverage') body = html`<${CoverageList} list=${args[0]} params=${params} key=${location.hash} />`;
  else body = html`<${Search} params=${params} key=${location.hash} />`;
  return html`<${Nav} me=${me} onLogout=${logout} /><main>${body}</main>`;
}

render(html`<${App} />`, document.getElementById('app'));
