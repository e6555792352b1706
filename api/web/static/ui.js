// Small pieces the pages share (app.js and discovery.js both import them; app.js imports
// discovery.js, so they live here rather than in either).

import { html, useState, useEffect } from './vendor/htm-preact.js';
import { get, enc, ApiError } from './api.js';

export const href = (page, ...args) => `#/${[page, ...args.map(enc)].join('/')}`;

export const isSteward = (me) => !!me && ['steward', 'admin'].includes(me.role);

// Whether `me` may change tags of `nodeId` (a steward of its database, or of every one).
export function canChange(me, nodeId) {
  if (!isSteward(me)) return false;
  if (me.databases === null || me.databases === undefined || !nodeId) return true;
  return me.databases.includes(nodeId.split('.')[0]);
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error instanceof ApiError ? error.message : String(error)}</p>`;
}

export function Select({ name, value, options, onChange }) {
  return html`<select name=${name} onChange=${(e) => onChange(e.target.value)}>
    ${options.map(([v, text]) => html`<option value=${v} selected=${v === value}>${text}</option>`)}
  </select>`;
}

// A list read a page at a time: `pathOf(cursor)` is the request of one page. It is read again
// from its first page whenever `deps` change or `reload()` is called; `more()` appends the next.
// `first` is the first page's answer once read (its total, a hint), null until then.
export function usePages(pathOf, deps) {
  const [items, setItems] = useState([]);
  const [next, setNext] = useState(null);
  const [first, setFirst] = useState(null);
  const [error, setError] = useState(null);
  const load = async (cursor) => {
    try {
      const page = await get(pathOf(cursor));
      if (!cursor) setFirst(page);
      setItems((old) => (cursor ? [...old, ...page.items] : page.items));
      setNext(page.next_cursor);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    setError(null);
    load();
  }, deps);
  return { items, next, first, error, setError, reload: () => load(), more: () => load(next) };
}
