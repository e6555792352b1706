// A node's description and owner on its table or column page: each with where it came from (the
// steward, the catalog, its table, or propagated along direct copies with the path back), and for
// a steward of the node's database a form to set or clear it (GET/PUT/DELETE
// /nodes/{id}/metadata, /description, /owner).

import { html, useState, useEffect } from './vendor/htm-preact.js';
import { api, get, enc } from './api.js';
import { href, canChange, ErrorBox } from './ui.js';

const LABELS = { description: 'Description', owner: 'Owner' };

function origin(value) {
  if (value.source === 'steward') return `set by ${value.by || 'a steward'}${value.at ? ` at ${value.at}` : ''}`;
  if (value.source === 'catalog') return 'from the catalog';
  if (value.source === 'table') return 'its table’s owner';
  if (value.source === 'propagated') return `propagated ${value.hops} hop(s) along direct copies`;
  return '';
}

// The way a propagated value came: each column it was copied from (by the task of that copy), back
// to the one that holds it as its own.
function PathBack({ path }) {
  if (!path || path.length < 2) return null;
  return html`<ol class="metadata-path" data-testid="metadata-path">
    ${path.slice(1).map(
      (step, i) => html`<li>
        copied by ${path[i].via_task} from${' '}
        <a href=${href(step.node.split('.').length >= 3 ? 'column' : 'table', step.node)}>${step.node}</a>
        ${step.source === 'propagated' ? '' : ` (${step.source})`}
      </li>`,
    )}
  </ol>`;
}

function Field({ me, nodeId, field, value, onChanged }) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState('');
  const [error, setError] = useState(null);
  const mayChange = canChange(me, nodeId);
  const save = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      onChanged(await api('PUT', `/nodes/${enc(nodeId)}/${field}`, { value: text }));
      setEditing(false);
    } catch (e) {
      setError(e);
    }
  };
  const clear = async () => {
    setError(null);
    try {
      onChanged(await api('DELETE', `/nodes/${enc(nodeId)}/${field}`));
    } catch (e) {
      setError(e);
    }
  };
  return html`<div class="metadata-field" data-testid=${`metadata-${field}`}>
    <h4>${LABELS[field]}</h4>
    ${value.value
      ? html`<p class="metadata-value" data-testid=${`${field}-value`}>${value.value}</p>
          <p class="facts" data-testid=${`${field}-source`}>${origin(value)}</p>
          <${PathBack} path=${value.path} />`
      : html`<p class="facts" data-testid=${`${field}-value`}>No ${field}.</p>`}
    ${mayChange && !editing
      ? html`<p class="row">
          <button type="button" data-testid=${`${field}-edit`} onClick=${() => {
            setText(value.steward || value.value || '');
            setEditing(true);
          }}>${value.steward ? 'Edit' : 'Set'}</button>
          ${value.steward
            ? html`<button type="button" data-testid=${`${field}-clear`} onClick=${clear}>Clear</button>`
            : null}
        </p>`
      : null}
    ${editing
      ? html`<form class="metadata-form" onSubmit=${save}>
          ${field === 'description'
            ? html`<textarea name=${field} rows="3" value=${text} onInput=${(e) => setText(e.target.value)} />`
            : html`<input name=${field} placeholder="an email address or a team" value=${text}
                onInput=${(e) => setText(e.target.value)} />`}
          <button type="submit" data-testid=${`${field}-save`}>Save</button>
          <button type="button" onClick=${() => setEditing(false)}>Cancel</button>
        </form>`
      : null}
    <${ErrorBox} error=${error} />
  </div>`;
}

export function MetadataPanel({ me, nodeId }) {
  const [shown, setShown] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setShown(null);
    get(`/nodes/${enc(nodeId)}/metadata`).then(setShown, setError);
  }, [nodeId]);
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!shown) return null;
  return html`<div class="metadata" data-testid="metadata">
    ${['description', 'owner'].map(
      (field) => html`<${Field} me=${me} nodeId=${nodeId} field=${field} value=${shown[field]} onChanged=${setShown} />`,
    )}
    <p class="facts">Columns copied from this one take its description at the next propagation run.</p>
  </div>`;
}
