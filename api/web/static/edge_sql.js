// An edge's task SQL with the target column's select item marked: GET /api/v1/edges gives each
// item's character span (`expressions`, found by the API: ingest/expression_spans.py).

import { html, useRef, useEffect } from './vendor/htm-preact.js';

// `sql` cut into pieces, the spans marked; overlapping or out-of-range spans are clipped.
export function sqlPieces(sql, spans) {
  const pieces = [];
  let at = 0;
  for (const { start, end } of [...(spans || [])].sort((a, b) => a.start - b.start)) {
    const from = Math.max(start, at);
    const to = Math.min(end, sql.length);
    if (to <= from) continue;
    if (from > at) pieces.push({ text: sql.slice(at, from), marked: false });
    pieces.push({ text: sql.slice(from, to), marked: true });
    at = to;
  }
  if (at < sql.length) pieces.push({ text: sql.slice(at), marked: false });
  return pieces;
}

export function TaskSql({ sql, spans }) {
  const box = useRef(null);
  useEffect(() => {
    const first = box.current && box.current.querySelector('mark');
    // inside the SQL's own scrolling box only: the page stays where the steward is
    if (first) box.current.scrollTop = Math.max(0, first.offsetTop - box.current.offsetTop - 24);
  }, [sql, spans]);
  return html`<pre class="sql" data-testid="edge-sql" ref=${box}>${sqlPieces(sql, spans).map((piece) =>
    piece.marked ? html`<mark data-testid="edge-expression">${piece.text}</mark>` : piece.text,
  )}</pre>`;
}
