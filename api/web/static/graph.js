// The lineage graph: cytoscape with a layered preset layout computed here.
//
// Layers are hops from the root (upstream negative, downstream positive), found by a BFS over
// the edges; a force or dagre layout takes seconds on 2,000 nodes, this takes milliseconds.
// Big layers wrap into several sub-columns so the drawing takes the container's shape.
//
// Labels are the point of the picture: each sits under its node, the column's name over its
// table, and a layer is as wide as its widest label (measured in the labels' own font), so the
// first (fit) zoom of a lineage of a few tables keeps them at their size; cytoscape draws no
// label smaller than MIN_LABEL_PX on screen rather than a grey smudge.

import cytoscape from './vendor/cytoscape.esm.min.js';

const FONT_PX = 12;
const FONT_FAMILY = 'system-ui, sans-serif';
const LINE_PX = 15;
const NODE_PX = 12;
const LABEL_GAP = 3; // between a node and its label
const COL_GAP = 40; // between the widest labels of two neighbouring sub-columns
const ROW_GAP = 8;
const ROW_HEIGHT = NODE_PX + LABEL_GAP + 2 * LINE_PX + ROW_GAP;
const MIN_ROWS = 6;
const MIN_LABEL_PX = 10;
const MAX_FIT_ZOOM = 1.25;
const PALETTE = ['#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#42d4f4', '#f032e6', '#9a6324', '#469990', '#808000'];
const NO_TAG = '#b8c2cc';
const LABEL_ZOOM = MIN_LABEL_PX / FONT_PX;
// above this many nodes the drawing is big: labels only on zooming in, no arrows, haystack edges
const BIG = 600;

// A node's label: the column's name over its table (a collapsed table: its name over its count).
export function labelOf(node) {
  if (node.isTable) return `${node.table}\n${node.columns} column${node.columns === 1 ? '' : 's'}`;
  const table = tableOf(node);
  return node.id.startsWith(`${table}.`) ? `${node.id.slice(table.length + 1)}\n${table}` : node.id;
}

const tagLines = (tags) => Object.entries(tags || {}).map(([key, values]) => `${key} = ${values.join(', ')}`);

// What hovering shows of a drawn node or edge, line by line.
export function detailsOf(item) {
  if (!item) return [];
  if (item.columnEdges) {
    const name = (id) => id.replace(/^table:/, '');
    return [`${name(item.source)} → ${name(item.target)}`, `${item.columnEdges.length} column edge${item.columnEdges.length === 1 ? '' : 's'}`];
  }
  if (item.source !== undefined) {
    const lines = [`${item.source} → ${item.target}`, `${item.type || 'FLOWS_TO'} · ${edgeKind(item)}`];
    if (item.functions && item.functions.length) lines.push(`functions: ${item.functions.join(', ')}`);
    if (item.task) lines.push(`task: ${item.task}`);
    return lines;
  }
  if (item.isTable) return [item.table, `${item.columns} columns shown (double-click to open)`, ...tagLines(item.tags)];
  const tags = tagLines(item.tags);
  return [item.id, `${(item.label || 'Column').toLowerCase()}${item.table ? ` of ${item.table}` : ''}`, ...(tags.length ? tags : ['no tags'])];
}

let measurer = null;
// The widest line of `label` in model pixels, as cytoscape will draw it.
function labelWidth(label) {
  if (!measurer) {
    measurer = document.createElement('canvas').getContext('2d');
    measurer.font = `${FONT_PX}px ${FONT_FAMILY}`;
  }
  return Math.max(...label.split('\n').map((line) => measurer.measureText(line).width));
}

export const tableOf = (node) => node.table || node.id.split('.').slice(0, -1).join('.');

function edgeKind(edge) {
  return edge.kind || edge.type || 'edge';
}

function style(big) {
  return [
    {
      selector: 'node',
      style: {
        'background-color': 'data(colour)',
        label: 'data(label)',
        'font-size': FONT_PX,
        'font-family': FONT_FAMILY,
        'line-height': LINE_PX / FONT_PX,
        'text-wrap': 'wrap',
        'text-valign': 'bottom',
        'text-halign': 'center',
        'text-margin-y': LABEL_GAP,
        width: NODE_PX,
        height: NODE_PX,
        'min-zoomed-font-size': MIN_LABEL_PX,
      },
    },
    ...(big ? [{ selector: 'node', style: { label: '' } }, { selector: 'node.root, node:selected, node.labelled', style: { label: 'data(label)' } }] : []),
    { selector: 'node.table', style: { shape: 'round-rectangle', width: 18, height: 18 } },
    { selector: 'node.root', style: { 'border-width': 3, 'border-color': '#111', width: 18, height: 18 } },
    { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#f5a623' } },
    {
      selector: 'edge',
      style: {
        width: 1,
        'line-color': '#9aa5b1',
        'target-arrow-color': '#9aa5b1',
        'target-arrow-shape': big ? 'none' : 'triangle',
        'arrow-scale': 0.7,
        'curve-style': big ? 'haystack' : 'straight',
      },
    },
    { selector: 'edge:selected', style: { 'line-color': '#f5a623', 'target-arrow-color': '#f5a623', width: 3 } },
  ];
}

function waitForDraw(cy) {
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      requestAnimationFrame(() => resolve());
    };
    cy.one('render', finish);
    setTimeout(finish, 5000); // a hidden container never draws
  });
}

// Draws a small throwaway graph off screen, while the lineage request is in flight: the first
// cytoscape drawing in a page runs cold code (style, collections, canvas caches) at about half
// speed, and a big graph should not pay for that after its data has arrived.
let warmed = null;
export function warmUp() {
  if (warmed) return warmed;
  const box = document.createElement('div');
  Object.assign(box.style, { position: 'absolute', left: '-10000px', top: '0', width: '600px', height: '400px' });
  document.body.appendChild(box);
  const elements = [];
  for (let i = 0; i < 400; i += 1) {
    elements.push({ group: 'nodes', data: { id: `w${i}`, label: `w${i}`, colour: NO_TAG }, position: { x: (i % 20) * 30, y: Math.floor(i / 20) * 20 } });
    if (i) elements.push({ group: 'edges', data: { id: `v${i}`, source: `w${i - 1}`, target: `w${i}` } });
  }
  const cy = cytoscape({ container: box, elements, style: style(true), layout: { name: 'preset', fit: false }, pixelRatio: 1 });
  warmed = waitForDraw(cy).then(() => {
    cy.destroy();
    box.remove();
  });
  return warmed;
}

export class LineageGraph {
  constructor(container, { onSelectNode, onSelectEdge, onExpand }) {
    this.container = container;
    this.handlers = { onSelectNode, onSelectEdge, onExpand };
    this.nodes = new Map();
    this.edges = new Map();
    this.root = null;
    this.hiddenKinds = new Set();
    this.colourKey = '';
    this.collapsed = false;
    this.cy = null;
    this.openTables = new Set();
    this.autoCollapsed = false;
    this.decideCollapse = false;
    // cytoscape says nothing when the pointer leaves its container over an element
    container.addEventListener('mouseleave', () => this.hideDetails());
  }

  setData(view) {
    this.nodes = new Map();
    this.edges = new Map();
    this.root = view.root;
    this.merge(view);
    this.openTables = new Set();
    // a new lineage decides again whether its columns can be read at the fit zoom
    if (this.autoCollapsed) this.collapsed = false;
    this.autoCollapsed = false;
    this.decideCollapse = true;
  }

  // Shows a collapsed table's columns, or collapses them back into the table.
  toggleTable(table) {
    if (this.openTables.has(table)) this.openTables.delete(table);
    else this.openTables.add(table);
  }

  // Whether the columns' labels would be too small to draw at the fit zoom (a big drawing
  // labels the nodes in view on zooming in instead: `labelOnZoom`).
  columnsUnreadable() {
    const { nodes, edges, root } = this.visible();
    if (nodes.length < 2 || nodes.length > BIG) return false;
    const level = LineageGraph.levels(nodes, edges, root);
    const widths = new Map(nodes.map((node) => [node.id, labelWidth(labelOf(node))]));
    const box = this.box();
    const { zoom } = this.viewportFor(LineageGraph.positions(nodes, level, widths, box), widths);
    return zoom * FONT_PX < MIN_LABEL_PX;
  }

  // Returns how many nodes and edges were new, so an expansion that found
  // nothing further can say so instead of redrawing the same picture.
  merge(view) {
    const before = this.nodes.size + this.edges.size;
    for (const node of view.nodes) this.nodes.set(node.id, node);
    for (const edge of view.edges) this.edges.set(`${edge.source}\u0000${edge.target}\u0000${edgeKind(edge)}`, edge);
    return this.nodes.size + this.edges.size - before;
  }

  kinds() {
    return [...new Set([...this.edges.values()].map(edgeKind))].sort();
  }

  tagKeys() {
    const keys = new Set();
    for (const node of this.nodes.values()) for (const key of Object.keys(node.tags || {})) keys.add(key);
    return [...keys].sort();
  }

  // The values of the colour key, in a stable order, each with its palette colour.
  legend() {
    if (!this.colourKey) return [];
    const values = new Set();
    for (const node of this.nodes.values()) {
      const tagValues = (node.tags || {})[this.colourKey];
      if (tagValues && tagValues.length) values.add(tagValues.slice().sort().join(','));
    }
    return [...values].sort().map((value, i) => ({ value, colour: PALETTE[i % PALETTE.length] }));
  }

  colourOf(tags, legend) {
    const values = (tags || {})[this.colourKey];
    if (!this.colourKey || !values || !values.length) return NO_TAG;
    const entry = legend.find((item) => item.value === values.slice().sort().join(','));
    return entry ? entry.colour : NO_TAG;
  }

  // What is drawn: the columns, or one node per table with the column edges merged.
  visible() {
    const edges = [...this.edges.values()].filter((edge) => !this.hiddenKinds.has(edgeKind(edge)));
    // A node whose every edge is of a hidden kind would float alone: it hides with its edges.
    const linked = new Set([this.root]);
    for (const edge of edges) linked.add(edge.source).add(edge.target);
    const hasEdge = new Set();
    for (const edge of this.edges.values()) hasEdge.add(edge.source).add(edge.target);
    const columns = [...this.nodes.values()].filter((node) => linked.has(node.id) || !hasEdge.has(node.id));
    if (!this.collapsed) {
      return { nodes: columns, edges, root: this.root };
    }
    // an opened table shows its columns; every other table is one node
    const open = (node) => this.openTables.has(tableOf(node));
    const tables = new Map();
    for (const node of columns) {
      if (open(node)) continue;
      const table = tableOf(node);
      const entry = tables.get(table) || { id: `table:${table}`, table, label: table, tags: {}, columns: 0, isTable: true };
      entry.columns += 1;
      for (const [key, values] of Object.entries(node.tags || {})) {
        entry.tags[key] = [...new Set([...(entry.tags[key] || []), ...values])];
      }
      tables.set(table, entry);
    }
    for (const entry of tables.values()) entry.label = `${entry.table} (${entry.columns})`;
    const merged = new Map();
    const kept = [];
    const shownAs = (node) => (open(node) ? node.id : `table:${tableOf(node)}`);
    for (const edge of edges) {
      const source = this.nodes.get(edge.source);
      const target = this.nodes.get(edge.target);
      if (!source || !target) continue;
      if (open(source) && open(target)) {
        kept.push(edge);
        continue;
      }
      const s = shownAs(source);
      const t = shownAs(target);
      if (s === t) continue;
      const key = `${s}\u0000${t}`;
      const entry = merged.get(key) || { source: s, target: t, kind: 'table', columnEdges: [] };
      entry.columnEdges.push(edge);
      merged.set(key, entry);
    }
    const rootNode = this.nodes.get(this.root);
    const root = rootNode ? shownAs(rootNode) : this.root;
    return { nodes: [...tables.values(), ...columns.filter(open)], edges: [...merged.values(), ...kept], root };
  }

  static levels(nodes, edges, root) {
    const down = new Map();
    const up = new Map();
    for (const edge of edges) {
      (down.get(edge.source) || down.set(edge.source, []).get(edge.source)).push(edge.target);
      (up.get(edge.target) || up.set(edge.target, []).get(edge.target)).push(edge.source);
    }
    const level = new Map([[root, 0]]);
    for (const [adjacent, step] of [
      [down, 1],
      [up, -1],
    ]) {
      let frontier = [root];
      while (frontier.length) {
        const next = [];
        for (const id of frontier) {
          for (const other of adjacent.get(id) || []) {
            if (level.has(other)) continue;
            level.set(other, level.get(id) + step);
            next.push(other);
          }
        }
        frontier = next;
      }
    }
    // The shortest distance puts A and B in one column when A feeds B and both feed the root
    // (common between tables): the edge A -> B then runs vertically and the flow is lost. Each
    // side is pushed out to its longest distance instead, so every edge points right; nodes on
    // a cycle keep their shortest one.
    LineageGraph.stretch(edges, level, root, 1);
    LineageGraph.stretch(
      edges.map((edge) => ({ source: edge.target, target: edge.source })),
      level,
      root,
      -1,
    );
    // Nodes reached only through expanded ones sit one hop past them.
    let changed = true;
    while (changed) {
      changed = false;
      for (const edge of edges) {
        if (level.has(edge.source) && !level.has(edge.target)) {
          level.set(edge.target, level.get(edge.source) + 1);
          changed = true;
        } else if (level.has(edge.target) && !level.has(edge.source)) {
          level.set(edge.source, level.get(edge.target) - 1);
          changed = true;
        }
      }
    }
    for (const node of nodes) if (!level.has(node.id)) level.set(node.id, 0);
    return level;
  }

  // Longest distance from the root along `edges`, over the nodes on the `step` side (Kahn's
  // order, so each node is placed after everything that feeds it).
  static stretch(edges, level, root, step) {
    const side = (id) => id === root || (level.has(id) && Math.sign(level.get(id)) === step);
    const inner = edges.filter((edge) => side(edge.source) && side(edge.target) && edge.target !== root);
    const waiting = new Map();
    const next = new Map();
    for (const edge of inner) {
      waiting.set(edge.target, (waiting.get(edge.target) || 0) + 1);
      (next.get(edge.source) || next.set(edge.source, []).get(edge.source)).push(edge.target);
    }
    const ready = [root];
    while (ready.length) {
      const id = ready.pop();
      for (const other of next.get(id) || []) {
        const further = level.get(id) + step;
        if (Math.abs(further) > Math.abs(level.get(other))) level.set(other, further);
        waiting.set(other, waiting.get(other) - 1);
        if (waiting.get(other) === 0) ready.push(other);
      }
    }
  }

  // Where each node goes: layers left to right by level, each wrapped into sub-columns of at most
  // `rows` nodes, each sub-column as wide as its widest label (`widths`: id -> label width). The
  // rows are those that let the drawing fit `box` at the largest zoom (the labels' size on screen
  // at the first, fit, zoom): a few tall layers wrap, many short ones do not.
  static positions(nodes, level, widths, box = { width: 800, height: 600 }) {
    const byLevel = new Map();
    for (const node of nodes) {
      const l = level.get(node.id);
      (byLevel.get(l) || byLevel.set(l, []).get(l)).push(node);
    }
    const layers = [...byLevel.keys()]
      .sort((a, b) => a - b)
      .map((l) => byLevel.get(l).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)));
    const tallest = Math.max(1, ...layers.map((members) => members.length));
    const widthOf = (node) => Math.max(NODE_PX, widths.get(node.id) || 0);
    const span = (rows) => {
      let width = 0;
      for (const members of layers) {
        for (let start = 0; start < members.length; start += rows) {
          let widest = 0;
          for (let i = start; i < Math.min(members.length, start + rows); i += 1) widest = Math.max(widest, widthOf(members[i]));
          width += widest + COL_GAP;
        }
      }
      return Math.min(box.width / width, box.height / (Math.min(rows, tallest) * ROW_HEIGHT));
    };
    // at most about 40 candidates, from one sub-column per layer down to MIN_ROWS rows
    let rowsPerSubColumn = tallest;
    let best = span(tallest);
    const step = Math.max(1, Math.floor((tallest - MIN_ROWS) / 40));
    for (let rows = tallest - step; rows >= MIN_ROWS; rows -= step) {
      const zoom = span(rows);
      if (zoom > best) [best, rowsPerSubColumn] = [zoom, rows];
    }
    const positions = new Map();
    let x = 0;
    for (const members of layers) {
      const rows = Math.min(members.length, rowsPerSubColumn);
      for (let start = 0; start < members.length; start += rowsPerSubColumn) {
        const column = members.slice(start, start + rowsPerSubColumn);
        const half = Math.max(...column.map(widthOf)) / 2;
        x += half;
        column.forEach((node, row) => positions.set(node.id, { x, y: (row - (rows - 1) / 2) * ROW_HEIGHT }));
        x += half + COL_GAP;
      }
    }
    return positions;
  }

  // Draws what is visible; resolves with the milliseconds from the data to the first frame drawn.
  async render() {
    const started = performance.now();
    // Columns too many to read at the fit zoom start as their tables: a double-click opens one.
    if (this.decideCollapse) {
      this.decideCollapse = false;
      if (!this.collapsed && this.columnsUnreadable()) this.collapsed = this.autoCollapsed = true;
    }
    const { nodes, edges, root } = this.visible();
    const level = LineageGraph.levels(nodes, edges, root);
    const labels = new Map(nodes.map((node) => [node.id, labelOf(node)]));
    const widths = new Map(nodes.map((node) => [node.id, labelWidth(labels.get(node.id))]));
    const box = this.box();
    const positions = LineageGraph.positions(nodes, level, widths, box);
    const legend = this.legend();
    const elements = [];
    this.shown = new Map(); // element id -> the node or edge object it draws
    for (const node of nodes) {
      this.shown.set(node.id, node);
      elements.push({
        group: 'nodes',
        data: { id: node.id, label: labels.get(node.id), colour: this.colourOf(node.tags, legend) },
        position: positions.get(node.id),
        classes: [node.id === root ? 'root' : '', node.isTable ? 'table' : ''].join(' ').trim(),
      });
    }
    edges.forEach((edge, i) => {
      this.shown.set(`e${i}`, edge);
      elements.push({ group: 'edges', data: { id: `e${i}`, source: edge.source, target: edge.target } });
    });
    const big = nodes.length > BIG;
    this.hideDetails();
    if (this.cy) this.cy.destroy();
    this.cy = cytoscape({
      container: this.container,
      elements,
      style: style(big),
      // positions are ours and so is the first viewport: fitting would measure every element
      layout: { name: 'preset', fit: false },
      ...this.viewportFor(positions, widths),
      minZoom: 0.02,
      maxZoom: 3,
      pixelRatio: big ? 1 : 'auto',
      textureOnViewport: big,
      hideEdgesOnViewport: big,
      motionBlur: false,
      boxSelectionEnabled: false,
    });
    const ref = (event) => this.shown.get(event.target.id());
    this.cy.on('tap', 'node', (event) => this.handlers.onSelectNode(ref(event)));
    this.cy.on('tap', 'edge', (event) => this.handlers.onSelectEdge(ref(event)));
    this.cy.on('dbltap', 'node', (event) => this.handlers.onExpand(ref(event)));
    this.cy.on('mouseover', 'node, edge', (event) => this.showDetails(ref(event), event.originalEvent));
    this.cy.on('mousemove', 'node, edge', (event) => this.moveDetails(event.originalEvent));
    this.cy.on('mouseout', 'node, edge', () => this.hideDetails());
    this.cy.on('viewport', () => this.hideDetails());
    if (big) this.labelOnZoom();
    await waitForDraw(this.cy);
    return { ms: performance.now() - started, nodes: nodes.length, edges: edges.length, legend };
  }

  box() {
    return { width: this.container.clientWidth || 800, height: this.container.clientHeight || 600 };
  }

  // The zoom and pan that show every node with its label and a margin: each label hangs under
  // its node, `widths` wide and two lines tall.
  viewportFor(positions, widths) {
    const { width, height } = this.box();
    let [x1, y1, x2, y2] = [Infinity, Infinity, -Infinity, -Infinity];
    for (const [id, { x, y }] of positions) {
      const half = Math.max(NODE_PX + 6, widths.get(id) || 0) / 2;
      x1 = Math.min(x1, x - half);
      y1 = Math.min(y1, y - NODE_PX);
      x2 = Math.max(x2, x + half);
      y2 = Math.max(y2, y + NODE_PX / 2 + LABEL_GAP + 2 * LINE_PX);
    }
    if (x1 === Infinity) return {};
    const margin = 16;
    const zoom = Math.min(MAX_FIT_ZOOM, Math.max(0.02, Math.min((width - 2 * margin) / (x2 - x1 || 1), (height - 2 * margin) / (y2 - y1 || 1))));
    return { zoom, pan: { x: width / 2 - (zoom * (x1 + x2)) / 2, y: height / 2 - (zoom * (y1 + y2)) / 2 } };
  }

  // Big graphs draw without labels (measuring 2,000 labels doubles the first drawing); zoomed in,
  // the nodes in view get theirs.
  labelOnZoom() {
    const cy = this.cy;
    let timer = null;
    const update = () => {
      const labelled = cy.nodes('.labelled');
      if (cy.zoom() < LABEL_ZOOM) {
        labelled.removeClass('labelled');
        return;
      }
      const { x1, x2, y1, y2 } = cy.extent();
      const inView = cy.nodes().filter((node) => {
        const { x, y } = node.position();
        return x >= x1 && x <= x2 && y >= y1 && y <= y2;
      });
      cy.batch(() => {
        labelled.difference(inView).removeClass('labelled');
        inView.addClass('labelled');
      });
    };
    cy.on('viewport', () => {
      clearTimeout(timer);
      timer = setTimeout(update, 150);
    });
  }

  // The hover box: fixed to the page at the pointer (the container's children are cytoscape's).
  showDetails(item, at) {
    if (!this.tip) {
      this.tip = document.createElement('div');
      this.tip.className = 'graph-tip';
      this.tip.setAttribute('role', 'tooltip');
      this.tip.dataset.testid = 'graph-tip';
      document.body.appendChild(this.tip);
    }
    this.tip.replaceChildren(
      ...detailsOf(item).map((line, i) => {
        const div = document.createElement('div');
        if (i === 0) div.className = 'head';
        div.textContent = line;
        return div;
      }),
    );
    this.tip.hidden = false;
    this.moveDetails(at);
  }

  moveDetails(at) {
    if (!this.tip || this.tip.hidden || !at) return;
    const x = Math.min(at.clientX + 14, window.innerWidth - this.tip.offsetWidth - 4);
    const y = Math.min(at.clientY + 14, window.innerHeight - this.tip.offsetHeight - 4);
    Object.assign(this.tip.style, { left: `${x}px`, top: `${y}px` });
  }

  hideDetails() {
    if (this.tip) this.tip.hidden = true;
  }

  fit() {
    if (this.cy) this.cy.fit(undefined, 30);
  }

  zoom(factor) {
    if (!this.cy) return;
    const centre = { x: this.container.clientWidth / 2, y: this.container.clientHeight / 2 };
    this.cy.zoom({ level: this.cy.zoom() * factor, renderedPosition: centre });
  }

  destroy() {
    if (this.tip) this.tip.remove();
    this.tip = null;
    if (this.cy) this.cy.destroy();
    this.cy = null;
  }
}
