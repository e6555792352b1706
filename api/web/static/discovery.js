// PII discovery in the steward UI: the discovery page (sample tables, proposals with confidence and
// masked evidence to accept or reject, leak and over-tag flags) and the panel of the column page.
// The API is /api/v1/discovery (api/http/routers/discovery.py); nothing here ever sees a sampled
// value, only counts and masked examples.

import { html, useState, useEffect } from './vendor/htm-preact.js';
import { api, get, qs, enc } from './api.js';
import { href, canChange, isSteward, ErrorBox, Select, usePages } from './ui.js';

const tagText = (tags) => Object.entries(tags || {}).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`);
const Chips = ({ tags }) => html`${tagText(tags).map((t) => html`<span class="chip">${t}</span>`)}`;
const percent = (x) => `${Math.round(x * 100)}%`;

// ------------------------------------------------------------------ one proposal, one flag

function Decide({ me, proposal, onDone, setError }) {
  if (!canChange(me, proposal.column)) return null;
  const decide = async (action) => {
    setError(null);
    try {
      const done = await api('POST', `/discovery/proposals/${enc(proposal.column)}/${action}`);
      onDone(done);
    } catch (e) {
      setError(e);
    }
  };
  return html`<span class="row">
    ${proposal.status !== 'accepted'
      ? html`<button class="small" data-action="accept" onClick=${() => decide('accept')}>accept</button>`
      : null}
    ${proposal.status !== 'rejected'
      ? html`<button class="small" data-action="reject" onClick=${() => decide('reject')}>reject</button>`
      : null}
  </span>`;
}

function Evidence({ evidence }) {
  const counts = Object.entries(evidence.detectors || {}).map(([name, n]) => `${name} ${n}`);
  return html`<span class="evidence">${counts.join(' · ')}${evidence.examples && evidence.examples.length
    ? html` · e.g. <code data-testid="examples">${evidence.examples.join(', ')}</code>`
    : null}${evidence.name_rule ? ` · name rule: ${evidence.name_rule}` : ''}</span>`;
}

function FlagPath({ flag }) {
  if (!flag.root) return html`<span class="muted">no column lineage leads into it</span>`;
  return html`<span class="flag-path" data-testid="flag-path">
    <a href=${href('column', flag.root)}>${flag.root}</a>${flag.root_tagged ? ' (tagged)' : ' (untagged)'}
    ${flag.path.map(
      (step) => html` → <a href=${href('column', step.target)}>${step.target}</a>${Object.keys(step.effects).length
        ? html` <span class="evidence">[${Object.entries(step.effects).map(([f, e]) => `${f}: ${e}`).join(', ')}]</span>`
        : null}`,
    )}
  </span>`;
}

// ------------------------------------------------------------------ the discovery page

function SampleForm({ onRun }) {
  const [tables, setTables] = useState('');
  const [force, setForce] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [run, setRun] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const names = tables.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean);
      const done = await api('POST', '/discovery/runs', { tables: names, force });
      setRun(done);
      onRun();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="row" data-testid="sample-form" onSubmit=${submit}>
      <input name="tables" placeholder="tables to sample: db.table, db.other" size="40" value=${tables}
        onInput=${(e) => setTables(e.target.value)} required />
      <label><input type="checkbox" checked=${force} onChange=${(e) => setForce(e.target.checked)} /> even if unchanged</label>
      <button type="submit" disabled=${busy}>Sample</button>
    </form>
    <${ErrorBox} error=${error} />
    ${run
      ? html`<p class="facts" data-testid="sample-run">run ${run.run}: ${run.tables.map((t) => `${t.table} ${t.status}`).join(', ')}${' '}
          · ${run.values} values judged · ${run.proposed} proposed · ${run.flagged} flagged</p>`
      : null}`;
}

function Proposals({ me, tick, onChanged }) {
  const [status, setStatus] = useState('open');
  const [table, setTable] = useState('');
  const [message, setMessage] = useState(null);
  const { items, next, error, setError, reload, more } = usePages(
    (cursor) => `/discovery/proposals${qs({ status, table: table.trim(), limit: 50, cursor })}`,
    [status, tick],
  );
  const decided = (done) => {
    setMessage(html`${done.column}: ${done.status} ${tagText(done.tags).join(' ')}.${' '}
      ${done.status === 'accepted' ? html`<a href="#/runs">Start a propagation run</a> to carry it downstream.` : ''}`);
    onChanged();
  };
  return html`<div data-testid="proposals">
    <h3>Proposals</h3>
    <form class="row" onSubmit=${(e) => {
      e.preventDefault();
      reload();
    }}>
      <${Select} name="status" value=${status} onChange=${setStatus}
        options=${[['open', 'open'], ['accepted', 'accepted'], ['rejected', 'rejected'], ['', 'all']]} />
      <input name="table" placeholder="table (db.table)" value=${table} onInput=${(e) => setTable(e.target.value)} />
      <button type="submit">Filter</button>
    </form>
    ${message ? html`<p class="ok" data-testid="discovery-message">${message}</p>` : null}
    <${ErrorBox} error=${error} />
    ${items.length
      ? html`<table class="grid">
          <thead><tr><th>column</th><th>proposed tags</th><th>confidence</th><th>evidence</th><th>status</th><th></th></tr></thead>
          <tbody>${items.map(
            (p) => html`<tr data-testid="proposal" data-column=${p.column} data-status=${p.status}>
              <td><a href=${href('column', p.column)}>${p.column}</a></td><td><${Chips} tags=${p.tags} /></td>
              <td>${percent(p.confidence)} of ${p.sampled}</td><td><${Evidence} evidence=${p.evidence} /></td>
              <td>${p.status}${p.by ? html` <span class="muted">by ${p.by}</span>` : null}</td>
              <td><${Decide} me=${me} proposal=${p} onDone=${decided} setError=${setError} /></td></tr>`,
          )}</tbody></table>`
      : html`<p>No proposals${status ? ` (${status})` : ''}.</p>`}
    ${next ? html`<button onClick=${more}>More</button>` : null}
  </div>`;
}

function Flags({ tick }) {
  const [kind, setKind] = useState('');
  const { items, next, error, more } = usePages(
    (cursor) => `/discovery/flags${qs({ kind, limit: 50, cursor })}`,
    [kind, tick],
  );
  return html`<div data-testid="flags">
    <h3>Flags: derived columns whose content disagrees with their tags</h3>
    <p class="row"><${Select} name="kind" value=${kind} onChange=${setKind}
      options=${[['', 'leaks and over-tagging'], ['leak', 'leaks'], ['over_tag', 'over-tagging']]} /></p>
    <${ErrorBox} error=${error} />
    ${items.length
      ? html`<table class="grid">
          <thead><tr><th>column</th><th>flag</th><th>content says</th><th>holds</th><th>share</th><th>path back</th><th>why</th></tr></thead>
          <tbody>${items.map(
            (f) => html`<tr data-testid="flag" data-column=${f.column} data-kind=${f.kind}>
              <td><a href=${href('column', f.column)}>${f.column}</a></td>
              <td><b class=${f.kind === 'leak' ? 'warn' : ''}>${f.kind === 'leak' ? 'possible leak' : 'possible over-tagging'}</b></td>
              <td><${Chips} tags=${f.tags} /></td><td><${Chips} tags=${f.held} /></td>
              <td>${percent(f.confidence)} of ${f.sampled}</td><td><${FlagPath} flag=${f} /></td>
              <td class="evidence">${f.reason}</td></tr>`,
          )}</tbody></table>`
      : html`<p>No flags.</p>`}
    ${next ? html`<button onClick=${more}>More</button>` : null}
  </div>`;
}

export function DiscoveryPage({ me }) {
  const [tick, setTick] = useState(0);
  const changed = () => setTick((t) => t + 1);
  return html`<section data-testid="discovery-page">
    <h2>Discovery</h2>
    <p class="facts">Sensitive columns found by their content: proposals to accept as seeds (origin${' '}
      <code>discovered</code>) or reject, and flags where a derived column's content disagrees with the
      tags propagation gave it. Examples are masked; no sampled value is stored.</p>
    ${isSteward(me) ? html`<${SampleForm} onRun=${changed} />` : null}
    <${Proposals} me=${me} tick=${tick} onChanged=${changed} />
    <${Flags} tick=${tick} />
  </section>`;
}

// ------------------------------------------------------------------ the column page's panel

export function DiscoveryPanel({ me, nodeId, onChanged }) {
  const [tick, setTick] = useState(0);
  const [proposal, setProposal] = useState(null);
  const [flags, setFlags] = useState([]);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    Promise.all([
      get(`/discovery/proposals${qs({ column: nodeId })}`),
      get(`/discovery/flags${qs({ column: nodeId })}`),
    ]).then(
      ([proposals, found]) => {
        if (!live) return;
        setProposal(proposals.items[0] || null);
        setFlags(found.items);
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [nodeId, tick]);
  if (!proposal && !flags.length && !error) return null;
  return html`<div class="discovery-panel" data-testid="discovery-panel">
    <h3>Discovery</h3>
    <${ErrorBox} error=${error} />
    ${proposal
      ? html`<div data-testid="column-proposal" data-status=${proposal.status}>
          <p><${Chips} tags=${proposal.tags} /> ${percent(proposal.confidence)} of ${proposal.sampled} values · <b>${proposal.status}</b></p>
          <p><${Evidence} evidence=${proposal.evidence} /></p>
          <${Decide} me=${me} proposal=${proposal} setError=${setError} onDone=${() => {
            setTick((t) => t + 1);
            onChanged && onChanged();
          }} />
        </div>`
      : null}
    ${flags.map(
      (f) => html`<div data-testid="column-flag" data-kind=${f.kind}>
        <p><b class=${f.kind === 'leak' ? 'warn' : ''}>${f.kind === 'leak' ? 'Possible leak' : 'Possible over-tagging'}</b>:
          content says <${Chips} tags=${f.tags} />, holds <${Chips} tags=${f.held} /></p>
        <p class="evidence">${f.reason}</p>
        <p><${FlagPath} flag=${f} /></p>
      </div>`,
    )}
  </div>`;
}
