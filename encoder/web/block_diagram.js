/**
 * Block diagram: one encoder block, pre- or post-norm, drawn as SVG (the Shapes view's figure):
 * a box a step from the block's input down to its output (norms yellow, attention blue, the
 * feed-forward green, the input and output dotted), ⊕ where the residual paths come back in,
 * arrows down the middle with the shape of the tensor leaving each step beside them (monospace),
 * the residual paths in blue going round the sublayers, dashed frames round the attention's and
 * the feed-forward's boxes with their names in italics, and what the config changes beyond the
 * boxes as bullet lines under the block.
 *
 * An ES module, no framework, no network: each host's glue calls `mount`, the whole joined
 * into one file per host (encoder/web/hosts.py). The stylesheet is block_diagram.css beside this file.
 *
 *   const chart = mount(host, data);   // host: an element or shadow root
 *   chart.update(newData);             // another architecture, text or language
 *   chart.destroy();
 *
 * data: {title, nodes: [{kind ("io" | "norm" | "attn" | "ffn" | "add"), text (the box's, or
 *        the add's operation), label (what the edge leaving it carries, before its shape; ""),
 *        shape ("[1, 9, 384]": the tensor leaving it), branch}] top to bottom, skips: [[from,
 *        into]] (each residual path: the node whose outgoing edge it leaves, the add it comes
 *        back into), groups: [{kind, name, first, last}] (the framed boxes), notes: string[]
 *        (the lines under the block), residual (the paths' word), fills ({kind: colour}),
 *        skip_colour, lang?, words?} (block_diagram.py beside it: block_diagram_data). Every word
 *        but the module's own (the readout's, the tools', the plot's label) comes translated;
 *        with `lang` and `words` (app.i18n.browser) the module's own are in that language too.
 *        Drawn with textContent only.
 *
 * Reading it: the mouse over a step, or the keyboard (the plot is one Tab stop: ↓ and ↑ the
 * next and previous step, Home the first, End the last; Escape clears), chooses a step: a ring
 * marks it, the shape leaving it is set in bold, and the readout below says which step of how
 * many it is, what it does and the shape of its output. In a right-to-left language the figure
 * is mirrored: the residual paths on the right, the shapes left of the arrows.
 *
 * Fitting its width: the boxes are at most DIAGRAM_MAX_BOX px wide and shrink with the host
 * (a phone's 350 px), their text wrapped; the arrows move left of the boxes' middle where the
 * shapes beside them would not fit, and a shape's label goes on a line of its own where it
 * still would not; the groups' names sit right of their boxes where there is room, else at the
 * top of their frames. Nothing is cut and nothing overlaps down to DIAGRAM_MIN_WIDTH.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="block-diagram"] role="figure", named by the title, with data-steps
 *            (how many nodes), data-draw-ms (the last draw's time), data-step (the chosen node,
 *            "" when none), data-width (the width it was drawn for)
 *   plot     the svg [data-role="plot"]: tabindex="0", role="application",
 *            aria-roledescription, aria-label (what it shows and how to read it); inside it
 *            [data-role="box"][data-step=i] (a step's box, the input's and output's too: data-
 *            kind), [data-role="add"][data-step=i] (a ⊕), [data-role="edge-label"][data-step=i]
 *            (the shape leaving node i: a group of texts, a line's label and shape in one, or
 *            apart in a right-to-left language), [data-role="arrow"], [data-role="skip"] (a
 *            residual path, data-from and data-into), [data-role="group"] (a frame, data-kind,
 *            with its [data-role="group-name"]), [data-role="note"] (the lines under the block,
 *            each after a [data-role="bullet"] or hanging: data-note, the note's index; a long
 *            note takes several) and [data-role="ring"] (the chosen step's mark, hidden when
 *            none)
 *   readout  [data-role="readout"], aria-live="polite": the chosen step and its output's shape
 *   tools    figure_tools.js's [data-testid=figure-text]: "Show as a table" (a row a step: its
 *            number, what it does, its output's shape) and "Save as…" (the figure as SVG or PNG,
 *            the table as CSV)
 *   message  [data-role="message"]: why nothing is drawn
 */
import { rightToLeft, _, n_ } from "./shared.js";
import { svgNode, FIGURE_INK, FIGURE_CHAR, figurePoint, mountFigure } from "./figure_tools.js";

const DIAGRAM_TEXT = 16; // px: a box's text
const DIAGRAM_EDGE = 15; // px: the shapes beside the arrows (monospace)
const DIAGRAM_SMALL = 14; // px: the groups' names, the residual paths' word, the notes
const DIAGRAM_BOX = 36; // px: a box of one line
const DIAGRAM_LINE = 20; // px: each more line of a box, or of a note
const DIAGRAM_GAP = 30; // px: between two steps (the arrow, the shape beside it)
const DIAGRAM_PAD = 6; // px: a frame's margin above and below its boxes
const DIAGRAM_ADD = 15; // px: a ⊕'s radius
const DIAGRAM_LANE = 40; // px: the residual paths' lane beside the boxes
const DIAGRAM_MAX_BOX = 380; // px: a box's widest
const DIAGRAM_MAX_WIDTH = 900; // px: the drawing's widest (a wider host: space at its end)
const DIAGRAM_MIN_WIDTH = 300; // px: narrower than this, drawn this wide (the figure scrolls)
const DIAGRAM_MONO = 0.62; // of the size: a monospace character's width, estimated
const DIAGRAM_MONO_FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, \"DejaVu Sans Mono\", monospace";
const DIAGRAM_ARROW = "#333333";
const DIAGRAM_FRAME = "#767676"; // 4.5:1 on white
const DIAGRAM_NAME = "#4a4a4a"; // the groups' names: 8.9:1 on white
const DIAGRAM_KINDS = ["io", "norm", "attn", "ffn", "add"];
const DIAGRAM_WIDE = /[\u1100-\u11FF\u2E80-\uA4CF\uAC00-\uD7AF\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]/u;
const DIAGRAM_RTL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFF]/u;

const diagramPrompt = () =>
  _("Hover a step, or Tab to the diagram and use ↑ and ↓: each step's output shape.");

/** Why `data` cannot be drawn, or "". */
function diagramProblem(data) {
  const nodes = data && Array.isArray(data.nodes) ? data.nodes : [];
  if (!nodes.length) return _("nothing to draw");
  const bad = nodes.findIndex((node) => !node || !DIAGRAM_KINDS.includes(node.kind)
    || typeof node.text !== "string" || typeof node.shape !== "string");
  if (bad >= 0) return `the step ${bad} is not a box of the diagram`;
  const inside = (i) => Number.isInteger(i) && i >= 0 && i < nodes.length;
  for (const skip of data.skips || []) {
    const ok = Array.isArray(skip) && inside(skip[0]) && inside(skip[1]) && skip[0] < skip[1]
      && nodes[skip[1]].kind === "add";
    if (!ok) return `the residual path ${JSON.stringify(skip)} does not end in an add below it`;
  }
  for (const group of data.groups || []) {
    if (!group || !inside(group.first) || !inside(group.last) || group.first > group.last) {
      return `the group ${group && group.kind} does not frame steps of the diagram`;
    }
  }
  return "";
}

/** `text`'s width in px at `size`, estimated (a wide character, Chinese or Korean, 1 em;
 * others `char` em). */
function diagramWidth(text, size, char = FIGURE_CHAR) {
  let width = 0;
  for (const c of String(text)) width += DIAGRAM_WIDE.test(c) ? 1 : char;
  return Math.ceil(width * size);
}

/** `text` in lines at most `width` px wide at `size`, broken between words, and inside a word
 * too wide for a line by itself (Chinese has no spaces). */
function diagramWrap(text, width, size, char = FIGURE_CHAR) {
  const lines = [];
  const fits = (line) => diagramWidth(line, size, char) <= width;
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    const last = lines.length - 1;
    if (last >= 0 && fits(`${lines[last]} ${word}`)) {
      lines[last] += ` ${word}`;
      continue;
    }
    let rest = word;
    while (!fits(rest) && [...rest].length > 1) { // as many characters as fit, then the others
      const chars = [...rest];
      let cut = 1;
      while (cut < chars.length && fits(chars.slice(0, cut + 1).join(""))) cut += 1;
      lines.push(chars.slice(0, cut).join(""));
      rest = chars.slice(cut).join("");
    }
    lines.push(rest);
  }
  return lines.length ? lines : [""];
}

/** A node's output as the readout and the table say it: "weights [1, 12, 9, 9]" (in a
 * right-to-left language the shape isolated left to right: in an Arabic sentence its numbers
 * would be read in the reverse order, "[9 ,9 ,12 ,1]"). */
function diagramOutput(node) {
  const shape = rightToLeft() ? `\u2066${node.shape}\u2069` : node.shape;
  return node.label ? `${node.label} ${shape}` : shape;
}

/** Every step as a table's row: its number, what it does, its output's shape. */
function diagramTable(d) {
  const head = [_("step"), _("what it does"), _("output shape")];
  if (!d) return { head, body: [] };
  return { head, body: d.nodes.map((node, i) => [String(i + 1), node.text, diagramOutput(node)]) };
}

/** The step a key on the plot moves to from `chosen` (-1: none), or undefined. */
function diagramKey(event, chosen, last) {
  if (event.key === "ArrowDown") return chosen < 0 ? 0 : Math.min(last, chosen + 1);
  if (event.key === "ArrowUp") return chosen < 0 ? 0 : Math.max(0, chosen - 1);
  if (event.key === "Home") return 0;
  if (event.key === "End") return last;
  if (event.key === "Escape" && chosen >= 0) return -1;
  return undefined;
}

function diagramLabel(d) {
  const steps = n_("{count} step", "{count} steps", d.nodes.length);
  return _("A block diagram of {steps}, top to bottom, from the block's input to its output; "
    + "the residual paths go round the sublayers into each ⊕. ↑ and ↓ choose a step, Home the "
    + "first, End the last; what it does and its output's shape are read below the diagram.",
  { steps });
}

// an edge's parts in the mono font, two characters between two of them
const edgePartWidth = (words) => diagramWidth(words, DIAGRAM_EDGE, DIAGRAM_MONO);
const DIAGRAM_EDGE_SPACE = 2 * DIAGRAM_MONO * DIAGRAM_EDGE;

/** `d` drawn into `canvas`, `width` px wide (what the ring and the mouse need kept in `state`): its
 * height. */
function diagramDraw(state, canvas, d, width) {
  const at = diagramAcross(d, width);
  const down = diagramDown(d, at);
  drawFrames(canvas, d, at, down);
  drawSkips(canvas, d, at, down);
  drawArrows(canvas, d, at, down);
  drawBoxes(canvas, d, at, down);
  // the notes under the block
  let noteY = down.noteTop;
  down.notes.forEach((wrapped, k) => {
    wrapped.forEach((line, j) => {
      noteY += DIAGRAM_LINE;
      if (j === 0) {
        canvas.appendChild(diagramText(at, 8, noteY - 5, "•", "left", { "data-role": "bullet",
          "font-size": DIAGRAM_SMALL }));
      }
      canvas.appendChild(diagramText(at, 22, noteY - 5, line, "left", { "data-role": "note",
        "data-note": k, "font-size": DIAGRAM_SMALL }));
    });
  });
  // the chosen step's ring: a box's or an add's
  const ring = svgNode("g", { "data-role": "ring", fill: "none", stroke: FIGURE_INK,
    "stroke-width": 3, visibility: "hidden", "pointer-events": "none" });
  ring.append(svgNode("rect", { rx: 7 }), svgNode("circle", { r: DIAGRAM_ADD + 6 }));
  canvas.appendChild(ring);
  // each node's band down the page, for the mouse: from the middle of the gap above it to the
  // middle of the gap below
  const { tops, bottoms } = down;
  const last = d.nodes.length - 1;
  const bands = d.nodes.map((_node, i) => [
    i === 0 ? 0 : (bottoms[i - 1] + tops[i]) / 2,
    i === last ? down.blockBottom : (bottoms[i] + tops[i + 1]) / 2,
  ]);
  const { spine, boxLeft, boxRight, X } = at;
  Object.assign(state, { tops, bottoms, bands, ring, spine, boxLeft, boxRight, X });
  return down.height;
}

/** A text anchored at x by its physical `side` ("left", "right" or "middle", as drawn left to
 * right: mirrored with the figure), written in the direction its own letters take unless
 * attributes.direction says; `lines` ([words, y] each): a tspan a line, where y is ignored. */
function diagramText({ rtl, X }, x, y, words, side, attributes = {}, lines = null) {
  const direction = attributes.direction || (DIAGRAM_RTL.test(words) ? "rtl" : "ltr");
  const seen = side === "middle" ? side : ((side === "left") !== rtl ? "left" : "right");
  const anchor = seen === "middle" ? "middle"
    : ((seen === "left") === (direction === "ltr") ? "start" : "end");
  const made = svgNode("text", { x: X(x), ...(lines ? {} : { y }), "text-anchor": anchor,
    ...attributes, direction }, lines ? null : words);
  for (const [line, at] of lines || []) {
    made.appendChild(svgNode("tspan", { x: X(x), y: at }, line));
  }
  return made;
}

/** Across the width, drawn left to right then mirrored for a right-to-left language: the
 * residual paths' word and lines | a frame's edge | the boxes (the arrows down them, the
 * shapes right of the arrows) | the groups' names, where they fit. */
function diagramAcross(d, width) {
  const rtl = rightToLeft();
  const used = Math.min(width, DIAGRAM_MAX_WIDTH);
  const nodes = d.nodes;
  const last = nodes.length - 1;
  const [frameLeft, boxLeft] = [44, 56];
  const boxWidth = Math.min(DIAGRAM_MAX_BOX, used - boxLeft - 16);
  const boxRight = boxLeft + boxWidth;
  const edgeRight = used - 8; // the shapes' right end at most
  // the arrows' line: the boxes' middle, or left of it where the widest shape would not fit
  // an edge's words: a line of parts, drawn one after the other from the arrow (in a
  // right-to-left language, the label and its shape apart: one text holding an Arabic label
  // and a shape, Chromium drew the shape's closing bracket mirrored)
  const edgeParts = (node) => (!node.label ? [node.shape]
    : rtl ? [node.label, node.shape] : [`${node.label}  ${node.shape}`]);
  const edgeWidth = (parts) => parts.reduce((sum, part) => sum + edgePartWidth(part), 0)
    + (parts.length - 1) * DIAGRAM_EDGE_SPACE;
  const widest = Math.max(0, ...nodes.slice(0, last).map((node) => edgeWidth(edgeParts(node))));
  const spine = Math.round(Math.max(boxLeft + 28,
    Math.min(boxLeft + boxWidth / 2, edgeRight - 10 - widest)));
  // each edge's lines: its label and shape on one, or each on its own where one is too wide
  const edges = nodes.map((node, i) => {
    if (i === last) return [];
    const one = edgeParts(node);
    return node.label && spine + 10 + edgeWidth(one) > edgeRight ? [[node.label], [node.shape]]
      : [one];
  });
  const edgesRight = Math.max(...edges.map((lines) =>
    spine + 10 + Math.max(0, ...lines.map(edgeWidth))));
  // the groups' names: beside their boxes where every name fits, else atop their frames
  const groups = d.groups || [];
  const nameLeft = Math.max(boxRight, edgesRight) + 20;
  const names = groups.map((g) => diagramWidth(g.name, DIAGRAM_SMALL));
  const beside = groups.length > 0 && nameLeft + Math.max(...names) + 12 <= used - 4;
  const frameRight = beside ? nameLeft + Math.max(...names) + 12
    : Math.max(boxRight + 10, Math.min(used - 4, edgesRight + 6));
  // atop a frame, a name on the wider side of the arrows' line
  const rightRoom = frameRight - 8 - (spine + 12);
  const leftRoom = spine - 12 - (frameLeft + 8);
  const heads = groups.map((g) => (beside ? [g.name]
    : diagramWrap(g.name, Math.max(rightRoom, leftRoom), DIAGRAM_SMALL)));
  return { rtl, used, frameLeft, frameRight, boxLeft, boxWidth, boxRight, spine, edges, groups,
    beside, heads, headSide: rightRoom >= leftRoom ? "right" : "left",
    X: (x) => (rtl ? width - x : x) };
}

/** Down the page: each node's top and bottom, each group's frame, each gap's edge, the notes'
 * lines and top, the block's bottom and the height. */
function diagramDown(d, at) {
  const { nodes } = d;
  const { groups, beside, heads, edges } = at;
  const last = nodes.length - 1;
  const firstOf = new Map(groups.map((g, k) => [g.first, k]));
  const lastOf = new Map(groups.map((g, k) => [g.last, k]));
  const lines = nodes.map((node) => (node.kind === "add" ? []
    : diagramWrap(node.text, at.boxWidth - 16, DIAGRAM_TEXT)));
  const [tops, bottoms, gaps] = [[], [], []]; // gaps: [top, bottom] of the gap below node i
  const frames = groups.map(() => ({ top: 0, bottom: 0 }));
  let y = 8;
  nodes.forEach((node, i) => {
    if (firstOf.has(i)) {
      const k = firstOf.get(i);
      frames[k].top = y;
      y += beside ? DIAGRAM_PAD : DIAGRAM_PAD + heads[k].length * DIAGRAM_LINE + 8;
    }
    tops.push(y);
    y += node.kind === "add" ? 2 * DIAGRAM_ADD
      : Math.max(DIAGRAM_BOX, lines[i].length * DIAGRAM_LINE + 14);
    bottoms.push(y);
    if (lastOf.has(i)) {
      y += DIAGRAM_PAD;
      frames[lastOf.get(i)].bottom = y;
    }
    if (i < last) {
      const gap = DIAGRAM_GAP + (edges[i].length - 1) * 18;
      gaps.push([y, y + gap]);
      y += gap;
    }
  });
  const blockBottom = y;
  const notes = (Array.isArray(d.notes) ? d.notes : []).map((note) =>
    diagramWrap(note, at.used - 30, DIAGRAM_SMALL)); // after a bullet, its lines hanging
  y += notes.length ? 12 : 0;
  const noteTop = y;
  y += notes.reduce((sum, wrapped) => sum + wrapped.length * DIAGRAM_LINE, 0);
  return { lines, tops, bottoms, frames, gaps, blockBottom, notes, noteTop,
    height: Math.ceil(y + 8) };
}

/** The groups' frames, under everything, each with its name. */
function drawFrames(canvas, d, at, { tops, bottoms, frames }) {
  const { frameLeft, frameRight, X } = at;
  at.groups.forEach((g, k) => {
    const frame = svgNode("g", { "data-role": "group", "data-kind": g.kind });
    const left = Math.min(X(frameLeft), X(frameRight));
    frame.appendChild(svgNode("rect", { x: left, y: frames[k].top,
      width: frameRight - frameLeft, height: frames[k].bottom - frames[k].top, rx: 6,
      fill: "none", stroke: DIAGRAM_FRAME, "stroke-width": 1.5, "stroke-dasharray": "6 4" }));
    const named = { "data-role": "group-name", "font-size": DIAGRAM_SMALL,
      "font-style": "italic", fill: DIAGRAM_NAME };
    if (at.beside) { // right of the boxes, at the middle box's height (no shape there)
      const middle = Math.floor((g.first + g.last) / 2);
      const centre = (tops[middle] + bottoms[middle]) / 2;
      frame.appendChild(diagramText(at, frameRight - 10, centre + DIAGRAM_SMALL * 0.35, g.name,
        "right", named));
    } else {
      const x = at.headSide === "right" ? frameRight - 8 : frameLeft + 8;
      const y = (j) => frames[k].top + DIAGRAM_PAD + 14 + j * DIAGRAM_LINE;
      frame.appendChild(diagramText(at, x, 0, g.name, at.headSide, named,
        at.heads[k].map((line, j) => [line, y(j)])));
    }
    canvas.appendChild(frame);
  });
}

/** The residual paths: from under their node, round the boxes, into their add. */
function drawSkips(canvas, d, { rtl, spine, X }, { tops, bottoms }) {
  const colour = d.skip_colour || "#0072B2";
  const skipX = 32;
  for (const [from, into] of d.skips || []) {
    const leave = bottoms[from] + 9;
    const arrive = (tops[into] + bottoms[into]) / 2;
    const tip = spine - DIAGRAM_ADD - 1;
    const skip = svgNode("g", { "data-role": "skip", "data-from": from, "data-into": into });
    skip.append(
      svgNode("path", { d: `M ${X(spine)} ${leave} L ${X(skipX)} ${leave} L ${X(skipX)} `
        + `${arrive} L ${X(tip - 9)} ${arrive}`, fill: "none", stroke: colour,
      "stroke-width": 3, "stroke-linejoin": "round" }),
      svgNode("path", { d: `M ${X(tip)} ${arrive} L ${X(tip - 11)} ${arrive - 6} `
        + `L ${X(tip - 11)} ${arrive + 6} Z`, fill: colour }),
    );
    const middle = (leave + arrive) / 2;
    const word = svgNode("text", { x: X(14), y: middle, "text-anchor": "middle",
      "dominant-baseline": "central", "font-size": DIAGRAM_SMALL, fill: colour,
      direction: DIAGRAM_RTL.test(d.residual || "") ? "rtl" : "ltr",
      transform: `rotate(${rtl ? 90 : -90} ${X(14)} ${middle})` }, d.residual || "");
    skip.appendChild(word);
    canvas.appendChild(skip);
  }
}

/** The arrows down the middle, each with the shape leaving its node beside it. */
function drawArrows(canvas, d, at, { tops, bottoms, gaps }) {
  const { spine, X, edges } = at;
  const last = d.nodes.length - 1;
  d.nodes.forEach((node, i) => {
    if (i === last) return;
    const from = bottoms[i];
    const to = tops[i + 1];
    canvas.append(
      svgNode("path", { "data-role": "arrow", d: `M ${X(spine)} ${from} L ${X(spine)} ${to - 9}`,
        stroke: DIAGRAM_ARROW, "stroke-width": 2.5, fill: "none" }),
      svgNode("path", { d: `M ${X(spine)} ${to} L ${X(spine) - 6} ${to - 11} `
        + `L ${X(spine) + 6} ${to - 11} Z`, fill: DIAGRAM_ARROW }),
    );
    const [top, bottom] = gaps[i];
    const first = (top + bottom) / 2 - ((edges[i].length - 1) * 18) / 2 + DIAGRAM_EDGE * 0.35;
    const edge = svgNode("g", { "data-role": "edge-label", "data-step": i,
      "font-family": DIAGRAM_MONO_FONT, "font-size": DIAGRAM_EDGE, fill: "#222222" });
    canvas.appendChild(edge);
    edges[i].forEach((parts, j) => {
      let x = spine + 10;
      for (const part of parts) { // a shape reads left to right in every language
        const written = diagramText(at, x, first + j * 18, part, "left",
          DIAGRAM_RTL.test(part) ? {} : { direction: "ltr" });
        edge.appendChild(written);
        const drawn = written.getComputedTextLength ? written.getComputedTextLength() : 0;
        x += (drawn > 0 ? drawn : edgePartWidth(part)) + DIAGRAM_EDGE_SPACE;
      }
    });
  });
}

/** The boxes, their words wrapped, and the adds. */
function drawBoxes(canvas, d, at, { tops, bottoms, lines }) {
  const { spine, boxLeft, boxRight, boxWidth, X } = at;
  d.nodes.forEach((node, i) => {
    const [top, bottom] = [tops[i], bottoms[i]];
    const centre = (top + bottom) / 2;
    if (node.kind === "add") {
      const r = DIAGRAM_ADD;
      const add = svgNode("g", { "data-role": "add", "data-step": i });
      add.append(
        svgNode("circle", { cx: X(spine), cy: centre, r, fill: "#ffffff", stroke: FIGURE_INK,
          "stroke-width": 2 }),
        svgNode("path", { d: `M ${X(spine) - r + 5} ${centre} L ${X(spine) + r - 5} ${centre} `
          + `M ${X(spine)} ${centre - r + 5} L ${X(spine)} ${centre + r - 5}`,
        stroke: FIGURE_INK, "stroke-width": 2 }),
      );
      canvas.appendChild(add);
      return;
    }
    const box = svgNode("g", { "data-role": "box", "data-step": i, "data-kind": node.kind });
    box.appendChild(svgNode("rect", { x: Math.min(X(boxLeft), X(boxRight)), y: top,
      width: boxWidth, height: bottom - top, rx: 4,
      fill: (d.fills && d.fills[node.kind]) || "#ffffff", stroke: FIGURE_INK,
      "stroke-width": 2, "stroke-dasharray": node.kind === "io" ? "2 4" : "none" }));
    const y = (j) => centre + (j - (lines[i].length - 1) / 2) * DIAGRAM_LINE
      + DIAGRAM_TEXT * 0.35;
    box.appendChild(diagramText(at, boxLeft + boxWidth / 2, 0, node.text, "middle",
      { "font-size": DIAGRAM_TEXT }, lines[i].map((line, j) => [line, y(j)])));
    canvas.appendChild(box);
  });
}

/** The ring, the bold shape and the readout at step `chosen` (-1: none) of `figure`'s data. */
function diagramShow({ root, plot, readout, state }, chosen) {
  const d = state.data;
  const on = Boolean(d) && chosen >= 0;
  root.dataset.step = on ? String(chosen) : "";
  for (const edge of plot.querySelectorAll("[data-role=edge-label]")) {
    edge.setAttribute("font-weight", on && Number(edge.dataset.step) === chosen ? 700 : 400);
  }
  if (state.ring) {
    state.ring.setAttribute("visibility", on ? "visible" : "hidden");
    if (on) {
      const [rect, circle] = state.ring.children;
      const add = d.nodes[chosen].kind === "add";
      rect.setAttribute("visibility", add ? "hidden" : "inherit");
      circle.setAttribute("visibility", add ? "inherit" : "hidden");
      const top = state.tops[chosen];
      const bottom = state.bottoms[chosen];
      circle.setAttribute("cx", state.X(state.spine));
      circle.setAttribute("cy", (top + bottom) / 2);
      rect.setAttribute("x", Math.min(state.X(state.boxLeft), state.X(state.boxRight)) - 5);
      rect.setAttribute("y", top - 5);
      rect.setAttribute("width", state.boxRight - state.boxLeft + 10);
      rect.setAttribute("height", bottom - top + 10);
    }
  }
  if (!on) {
    readout.textContent = d ? diagramPrompt() : "";
    return;
  }
  const node = d.nodes[chosen];
  const values = { step: chosen + 1, total: d.nodes.length, what: node.text,
    shape: diagramOutput(node) };
  readout.textContent = node.kind === "io"
    ? _("Step {step} of {total}, {what}: {shape}", values)
    : _("Step {step} of {total}, {what}: its output, {shape}", values);
}

export function mount(host, data) {
  let chosen = -1; // a node's index
  const { root, plot, readout, state, start } = mountFigure(host, {
    name: "bdg", testid: "block-diagram", choice: "step", untitled: "block diagram",
    minWidth: DIAGRAM_MIN_WIDTH, role: () => _("block diagram"), problem: diagramProblem,
    counts: { steps: (d) => d.nodes.length }, label: diagramLabel, table: diagramTable,
    forget: (d) => { if (!d || chosen >= d.nodes.length) chosen = -1; },
    draw: (canvas, d, width) => diagramDraw(state, canvas, d, width),
    show: () => show(), choose,
    key: (event, d) => diagramKey(event, chosen, d.nodes.length - 1),
  });

  const show = () => diagramShow({ root, plot, readout, state }, chosen);

  function choose(next) {
    if (next === chosen) return;
    chosen = next;
    show();
  }

  plot.addEventListener("mousemove", (event) => {
    if (!state.data) return;
    const { y } = figurePoint(plot, state, event);
    const found = state.bands.findIndex(([top, bottom]) => y >= top && y < bottom);
    if (found >= 0) choose(found);
  });

  return start(data);
}
