// The preview of a steward's tag change, shown before the change is made: which columns and tables
// the next propagation run would change, and how (POST /api/v1/preview, api/service/tag_preview.py:
// the engine's own run of the change, written nowhere). Confirm makes the change; Cancel drops it.

import { html, useState, useEffect, useRef } from './vendor/htm-preact.js';
import { api } from './api.js';
import { href, ErrorBox } from './ui.js';

// The change as the preview and the change's own route take it: set and block are PUT, unset and
// unblock DELETE, on /tags/{key} or /blocks/{key}.
export function proposal(nodeId, action, key, values = []) {
  const where = action === 'set' || action === 'unset' ? 'tags' : 'blocks';
  const method = action === 'set' || action === 'block' ? 'PUT' : 'DELETE';
  return {
    change: { node: nodeId, action, key, values },
    method,
    path: `/${where}/${encodeURIComponent(key)}`,
    body: action === 'set' ? { values } : undefined,
  };
}

const said = (change) => `${change.action} ${change.key}${change.values.length ? `=${change.values.join(',')}` : ''}`;
const shown = (values) => (values.length ? values.join(', ') : '—');
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

function headline(found) {
  if (!found.total) return 'No tag would change, here or downstream.';
  const listed = found.groups.reduce((n, g) => n + g.items.length, 0);
  const parts = [
    `These ${plural(found.columns, 'column', 'columns')} change, in these ${plural(found.tables, 'table', 'tables')}`,
  ];
  parts.push(`(${plural(found.total, 'tag', 'tags')}${found.truncated ? `, ${listed} listed` : ''})`);
  if (found.hidden) parts.push(`· ${found.hidden} more in databases you may not see`);
  return parts.join(' ');
}

export function ChangePreview({ proposed, onConfirm, onCancel }) {
  const [found, setFound] = useState(null);
  const [error, setError] = useState(null);
  const { change } = proposed;
  const box = useRef(null);
  useEffect(() => {
    let live = true;
    setFound(null);
    setError(null);
    api('POST', '/preview', change).then(
      (answer) => {
        if (!live) return;
        setFound(answer);
        // the side bar is narrow and the preview below its form: bring Confirm into view
        requestAnimationFrame(() => box.current && box.current.scrollIntoView({ block: 'nearest' }));
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [JSON.stringify(change)]);
  return html`<div class="preview" ref=${box} data-testid="preview" role="dialog" aria-label="Preview of the change">
    <h4>Before you ${said(change)} on ${change.node}</h4>
    <${ErrorBox} error=${error} />
    ${!found && !error ? html`<p class="loading">Computing what the next propagation run would change…</p>` : null}
    ${found
      ? html`<p data-testid="preview-summary">${headline(found)}</p>
        ${found.groups.map(
          (group) => html`<div class="preview-table" data-table=${group.table}>
            <b><a href=${href('table', group.table)}>${group.table}</a></b>
            <span class="muted"> ${plural(group.changes, 'change', 'changes')}</span>
            <table class="grid">
              <thead><tr><th>column</th><th>tag</th><th>now</th><th>next run</th></tr></thead>
              <tbody>${group.items.map(
                (item) => html`<tr data-node=${item.node} data-key=${item.key}>
                  <td>${item.node === group.table ? '(table)' : item.node.slice(group.table.length + 1)}</td>
                  <td>${item.key}</td><td>${shown(item.before)}</td><td>${shown(item.after)}</td>
                </tr>`,
              )}</tbody>
            </table>
          </div>`,
        )}`
      : null}
    <p class="row">
      <button data-testid="preview-confirm" disabled=${!found} onClick=${onConfirm}>Confirm: ${said(change)}</button>
      <button class="small" data-testid="preview-cancel" onClick=${onCancel}>Cancel</button>
    </p>
  </div>`;
}
