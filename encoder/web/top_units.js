/**
 * Top units: one token's most active feed-forward units after the activation, drawn as SVG (the
 * Activations view's figure): on the left, bars of the token's k largest values, largest on top,
 * each row named by its unit; on the right, a heatmap of the same units (rows) on every token of
 * the sentence (columns), viridis colours with a colour bar, the token's own column outlined.
 *
 * Plain ES module, no framework, no build step, no network. Hosts load it joined after shared.js
 * (element, number, _, n_, speakWith, spoken, rightToLeft, viridis, rgb) and figure_tools.js
 * (figureControls, svgNode, svgDocument, figureSaid), and before their glue, which calls `mount`
 * (encoder/web/hosts.py). The stylesheet is top_units.css beside this file.
 *
 *   const chart = mount(host, data);   // host: an element or shadow root
 *   chart.update(newData);             // another token, layer, sentence or language
 *   chart.destroy();
 *
 * data: {title, notes: string[] (the lines under the title), tokens: string[] (one per
 *        position), token (the position whose units these are), units: string[k] (each row's
 *        label, "unit 200"), values: number[k] (the bars: the token's values, largest first),
 *        across: number[k][n] (the heatmap: each unit on every token),
 *        zmin, zmax (the colour scale's ends), scale (the colour bar's title), colour (the
 *        bars'), lang?, words?} (app/charts/top_units.py). Every word but the module's own
 *        (the readout's, the tools', the plot's label) comes translated; with `lang` and `words`
 *        (app.i18n.browser) the module's own are in that language too.
 * User text (tokens) is drawn with textContent only.
 *
 * Reading it: the mouse over a bar or a cell, or the keyboard (the plot is one Tab stop: ↑ and
 * ↓ the unit above and below, ← and → the token before and after in the direction they are
 * drawn, Home the first token, End the last, Page Up the first unit, Page Down the last; Escape
 * clears), chooses a cell: a ring marks it, a band its unit's bar, and the readout below gives
 * the unit's value on that token (a bar is its unit on the outlined token). In a right-to-left
 * language the figure is mirrored: the bars on the right, growing leftwards, the units named on
 * their right, the first token's column on the right, the colour bar on the left.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="top-units"] role="figure", named by the title, with data-units and
 *            data-tokens (how many), data-draw-ms (the last draw's time), data-cell (the chosen
 *            cell, "unit,token": its row and its position; "" when none), data-width (the
 *            width it was drawn for)
 *   plot     the svg [data-role="plot"]: tabindex="0", role="application",
 *            aria-roledescription, aria-label (what it shows, its largest value, how to read
 *            it); inside it [data-role="bar"][data-unit=i] (a unit's bar), [data-role="label"]
 *            [data-unit=i] (its name), [data-role="cell"][data-unit=i][data-token=j] (the
 *            heatmap's cells, their colour in `fill`), [data-role="chosen-column"] (the outlined
 *            column, data-token), [data-role="tick"] (the token labels shown: data-position, and
 *            the whole token in data-token-text), [data-role="axis"] (the bars' values),
 *            [data-role="colour-bar"], [data-role="ring"] (the chosen cell's mark) and
 *            [data-role="row"] (its unit's band; both hidden when none)
 *   readout  [data-role="readout"], aria-live="polite": the chosen cell's unit, token and value
 *   tools    figure_tools.js's [data-testid=figure-text]: "Show as a table" (a row a unit: its
 *            label, then its value on every token) and "Save as…" (the figure as SVG or PNG, the
 *            table as CSV)
 *   message  [data-role="message"]: why nothing is drawn
 */

const UNITS_TEXT = 14; // px: every label (none under 12 px: the page's rule)
const UNITS_ROW = 28; // px: a unit's row
const UNITS_TOP = 32; // px: above the rows, the bars' values and the colour bar's title
const UNITS_MIN_WIDTH = 300; // px: narrower than this, drawn this wide (the page scrolls)
const UNITS_SHARES = [0.28, 0.72]; // the bars' and the heatmap's shares of the plots' width
const UNITS_GAP = 0.03; // between them, a share of the plots' width
const UNITS_SCALE_WIDTH = 14; // px: the colour bar's
const UNITS_SCALE_STEPS = 48; // the colour bar's bands
const UNITS_OUTLINE = "#E69F00"; // the outlined token's column
const UNITS_ARROWS = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

const unitsPrompt = () =>
  _("Hover a bar or a cell, or Tab to the plot and use the arrow keys: one unit's value on one token.");

/** Why `data` cannot be drawn, or "". */
function unitsProblem(data) {
  const count = data && Array.isArray(data.tokens) ? data.tokens.length : 0;
  const k = data && Array.isArray(data.units) ? data.units.length : 0;
  if (!count || !k) return _("nothing to draw");
  const numbers = (row) => Array.isArray(row) && row.every(Number.isFinite);
  if (!numbers(data.values) || data.values.length !== k) return `the bars do not have ${k} values`;
  const ok = Array.isArray(data.across) && data.across.length === k
    && data.across.every((row) => numbers(row) && row.length === count);
  if (!ok) return `the heatmap does not have ${k} x ${count} values`;
  if (!Number.isInteger(data.token) || data.token < 0 || data.token >= count) {
    return `the token ${data.token} is not one of the ${count} positions`;
  }
  return "";
}

/** The bars' scale over [low, high]: the most steps (4 at most) whose labels fit side by side
 * in `width` px. */
function unitsBarScale(low, high, width) {
  for (let count = 4; count > 1; count -= 1) {
    const scale = niceScale(low, high, count);
    const widest = Math.max(...scale.ticks.map((t) => unitsWidth(number(t, scale.digits, false))));
    if (width / (scale.ticks.length - 1) >= widest + 10) return scale;
  }
  return niceScale(low, high, 1);
}

/** A label's width in px at `size`, estimated. */
const unitsWidth = (text, size = UNITS_TEXT) => Math.ceil([...String(text)].length * FIGURE_CHAR * size);

/** `value` on the colour scale of `d`, as a CSS colour (viridis from zmin to zmax). */
function unitsColour(d, value) {
  const span = d.zmax - d.zmin;
  return rgb(viridis(span > 0 ? (value - d.zmin) / span : 0));
}

/** Every unit as a table's row: its label, then its value on every token. */
function unitsTable(d) {
  if (!d) return { head: [_("unit")], body: [] };
  const head = [_("unit"), ...d.tokens.map((token, p) => `${p} ${token}`)];
  const body = d.units.map((unit, i) => [unit, ...d.across[i].map((v) => String(v))]);
  return { head, body };
}

export function mount(host, data) {
  const root = element("div", { class: "tpu", "data-testid": "top-units", role: "figure",
    "data-cell": "" });
  const title = element("div", { class: "tpu-title" });
  const notes = element("div", { class: "tpu-notes" });
  const message = element("div", { class: "tpu-message", "data-role": "message" });
  const plot = svgNode("svg", { class: "tpu-plot", "data-role": "plot", tabindex: "0",
    role: "application" });
  const readout = element("div", { class: "tpu-readout", "data-role": "readout",
    "aria-live": "polite" });
  const tools = figureControls({
    title: () => title.textContent || "top units",
    table: () => unitsTable(state.data),
    svg: () => savedFigure(plot, state.width || UNITS_MIN_WIDTH, state.height, title.textContent,
      state.data ? state.data.notes : []),
  });
  root.append(title, notes, message, plot, readout, tools);
  host.appendChild(root);

  let state = { data: null, width: 0, height: 0 };
  let chosen = null; // {unit, token}: a row and a position

  function draw() {
    const start = performance.now();
    plot.replaceChildren();
    const d = state.data;
    if (!d) return;
    // one group holds the drawing, its font with it (a saved SVG has no stylesheet)
    const canvas = svgNode("g", { "font-family": FIGURE_FONT, fill: FIGURE_INK });
    plot.appendChild(canvas);
    const rtl = rightToLeft();
    const width = Math.max(UNITS_MIN_WIDTH, Math.floor(root.clientWidth || host.clientWidth || 640));
    const k = d.units.length;
    const count = d.tokens.length;
    // across the width, drawn left to right then mirrored for a right-to-left language:
    // the units' names | the bars | a gap | the heatmap | the colour bar and its values
    const X = (x) => (rtl ? width - x : x); // a point
    const R = (x, w) => (rtl ? width - x - w : x); // a box's left edge
    const near = rtl ? "start" : "end"; // a label's anchor that keeps it toward the plots
    const far = rtl ? "end" : "start";
    const names = Math.max(...d.units.map((u) => unitsWidth(u))) + 12;
    const colours = niceScale(d.zmin, d.zmax, Math.max(2, Math.floor((k * UNITS_ROW) / 28)));
    const inScale = colours.ticks.filter((t) => t >= d.zmin - 1e-9 && t <= d.zmax + 1e-9);
    const scaleLabels = Math.max(0, ...inScale.map((t) => number(t, colours.digits, false).length));
    const scaleArea = 14 + Math.max(UNITS_SCALE_WIDTH + 6 + Math.ceil(scaleLabels * FIGURE_CHAR * UNITS_TEXT),
      unitsWidth(d.scale)) + 6;
    const plots = Math.max(60, width - names - scaleArea);
    const barsWidth = plots * (1 - UNITS_GAP) * UNITS_SHARES[0];
    const heatWidth = plots * (1 - UNITS_GAP) * UNITS_SHARES[1];
    const barsLeft = names;
    const heatLeft = barsLeft + barsWidth + plots * UNITS_GAP;
    const scaleLeft = heatLeft + heatWidth + 14;
    const band = heatWidth / count;
    const top = UNITS_TOP;
    const rows = k * UNITS_ROW;
    const scaleHeight = Math.max(rows, 3 * UNITS_ROW);
    // the token labels under the heatmap: as many as fit side by side at an angle, the
    // outlined token's always among them
    const room = UNITS_TEXT * 1.3;
    const every = Math.max(1, Math.ceil(count / Math.max(1, Math.floor(heatWidth / room))));
    const shown = [];
    for (let p = 0; p < count; p += every) {
      if (p === d.token || Math.abs(p - d.token) * band >= room) shown.push(p);
    }
    if (!shown.includes(d.token)) shown.push(d.token);
    shown.sort((a, b) => a - b);
    const longest = Math.max(...shown.map((p) => [...tokenLabel(d.tokens[p])].length));
    const labels = Math.ceil(longest * FIGURE_CHAR * UNITS_TEXT * Math.SQRT1_2) + 24;
    const height = Math.max(top + rows + labels, top + scaleHeight + 12);
    plot.setAttribute("width", width);
    plot.setAttribute("height", height);
    plot.setAttribute("viewBox", `0 0 ${width} ${height}`);

    // the chosen unit's band, under everything
    const row = svgNode("rect", { "data-role": "row", x: R(0, heatLeft - plots * UNITS_GAP / 2),
      width: heatLeft - plots * UNITS_GAP / 2, height: UNITS_ROW, fill: "#e8e8e8",
      visibility: "hidden", "pointer-events": "none" });
    canvas.appendChild(row);

    // the bars: their values' axis above them, zero at their base
    const values = unitsBarScale(Math.min(0, ...d.values), Math.max(0, ...d.values), barsWidth);
    const xOfValue = (v) => barsLeft + ((v - values.low) / (values.high - values.low)) * barsWidth;
    const axis = svgNode("g", { "data-role": "axis" });
    for (const tick of values.ticks) {
      const x = X(xOfValue(tick));
      axis.append(
        svgNode("line", { x1: x, x2: x, y1: top - 4, y2: top + rows,
          stroke: tick === 0 ? "#8c8c8c" : "#e3e3e3" }),
        svgNode("text", { x, y: top - 10, "text-anchor": "middle", "font-size": UNITS_TEXT },
          number(tick, values.digits, false)),
      );
    }
    canvas.appendChild(axis);
    const zero = xOfValue(0);
    d.units.forEach((unit, i) => {
      const y = top + i * UNITS_ROW;
      const end = xOfValue(d.values[i]);
      canvas.append(
        svgNode("rect", { "data-role": "bar", "data-unit": i,
          x: R(Math.min(zero, end), Math.abs(end - zero)).toFixed(2), y: y + UNITS_ROW * 0.15,
          width: Math.abs(end - zero).toFixed(2), height: UNITS_ROW * 0.7, fill: d.colour }),
        svgNode("text", { "data-role": "label", "data-unit": i, x: X(barsLeft - 8),
          y: y + UNITS_ROW / 2 + UNITS_TEXT * 0.35, "text-anchor": near, "font-size": UNITS_TEXT },
        unit),
      );
    });

    // the heatmap: a cell a unit and a token
    const cells = svgNode("g", { "data-role": "heatmap" });
    d.across.forEach((line, i) => {
      const y = top + i * UNITS_ROW;
      line.forEach((v, p) => {
        cells.appendChild(svgNode("rect", { "data-role": "cell", "data-unit": i, "data-token": p,
          x: R(heatLeft + p * band, band).toFixed(2), y, width: band.toFixed(2),
          height: UNITS_ROW, fill: unitsColour(d, v) }));
      });
    });
    canvas.appendChild(cells);
    // the outlined token's column: orange, edged in black to stand apart from yellow cells
    const column = svgNode("g", { "data-role": "chosen-column", "data-token": d.token,
      fill: "none", "pointer-events": "none" });
    const columnX = R(heatLeft + d.token * band, band);
    column.append(
      svgNode("rect", { x: columnX - 2.5, y: top - 2.5, width: band + 5, height: rows + 5,
        stroke: FIGURE_INK, "stroke-width": 1 }),
      svgNode("rect", { x: columnX, y: top, width: band, height: rows, stroke: UNITS_OUTLINE,
        "stroke-width": 3 }),
    );
    canvas.appendChild(column);

    // the colour bar: its bands from zmin (bottom) to zmax (top), its values beside it
    const scale = svgNode("g", { "data-role": "colour-bar" });
    const step = scaleHeight / UNITS_SCALE_STEPS;
    for (let s = 0; s < UNITS_SCALE_STEPS; s += 1) {
      const v = d.zmin + ((s + 0.5) / UNITS_SCALE_STEPS) * (d.zmax - d.zmin);
      scale.appendChild(svgNode("rect", { x: R(scaleLeft, UNITS_SCALE_WIDTH),
        y: (top + scaleHeight - (s + 1) * step).toFixed(2), width: UNITS_SCALE_WIDTH,
        height: (step + 0.5).toFixed(2), fill: unitsColour(d, v) }));
    }
    const span = d.zmax - d.zmin;
    for (const tick of inScale) {
      const y = span > 0 ? top + scaleHeight - ((tick - d.zmin) / span) * scaleHeight : top + scaleHeight;
      scale.append(
        svgNode("line", { x1: X(scaleLeft + UNITS_SCALE_WIDTH), x2: X(scaleLeft + UNITS_SCALE_WIDTH + 4),
          y1: y, y2: y, stroke: FIGURE_INK }),
        svgNode("text", { x: X(scaleLeft + UNITS_SCALE_WIDTH + 6), y: y + UNITS_TEXT * 0.35,
          "text-anchor": far, "font-size": UNITS_TEXT }, number(tick, colours.digits, false)),
      );
    }
    scale.appendChild(svgNode("text", { x: X(scaleLeft), y: top - 10, "text-anchor": far,
      "font-size": UNITS_TEXT }, d.scale));
    canvas.appendChild(scale);

    // the token labels, under their columns
    const base = top + rows + 8;
    for (const p of shown) {
      const x = X(heatLeft + (p + 0.5) * band);
      canvas.appendChild(svgNode("text", { "data-role": "tick", "data-position": p,
        "data-token-text": d.tokens[p], x, y: base + UNITS_TEXT * 0.7, "font-size": UNITS_TEXT,
        "font-weight": p === d.token ? 700 : 400, "text-anchor": rtl ? "start" : "end",
        transform: `rotate(${rtl ? 45 : -45} ${x} ${base})` }, tokenLabel(d.tokens[p])));
    }

    // the chosen cell's ring: white inside black, seen on every colour
    const ring = svgNode("g", { "data-role": "ring", fill: "none", visibility: "hidden",
      "pointer-events": "none" });
    ring.append(
      svgNode("rect", { "data-edge": "outer", stroke: FIGURE_INK, "stroke-width": 2 }),
      svgNode("rect", { "data-edge": "inner", stroke: "#ffffff", "stroke-width": 2 }),
    );
    canvas.appendChild(ring);
    Object.assign(state, { width, height, top, band, barsLeft, barsRight: barsLeft + barsWidth,
      heatLeft, heatRight: heatLeft + heatWidth, gap: plots * UNITS_GAP, ring, row, R });
    root.dataset.width = String(width);
    root.dataset.drawMs = (performance.now() - start).toFixed(1);
    show();
  }

  /** The ring, the band and the readout at the chosen cell. */
  function show() {
    const d = state.data;
    const on = Boolean(d && chosen);
    root.dataset.cell = on ? `${chosen.unit},${chosen.token}` : "";
    if (state.ring) {
      state.ring.setAttribute("visibility", on ? "visible" : "hidden");
      state.row.setAttribute("visibility", on ? "visible" : "hidden");
      if (on) {
        const x = state.R(state.heatLeft + chosen.token * state.band, state.band);
        const y = state.top + chosen.unit * UNITS_ROW;
        const [outer, inner] = state.ring.children;
        const box = (rect, pad) => {
          rect.setAttribute("x", (x - pad).toFixed(2));
          rect.setAttribute("y", (y - pad).toFixed(2));
          rect.setAttribute("width", (state.band + 2 * pad).toFixed(2));
          rect.setAttribute("height", UNITS_ROW + 2 * pad);
        };
        box(outer, 1);
        box(inner, -1);
        state.row.setAttribute("y", y);
      }
    }
    if (!on) {
      readout.textContent = d ? unitsPrompt() : "";
      return;
    }
    readout.textContent = _("{unit}, token {position} “{token}”: {value}", {
      unit: d.units[chosen.unit], position: chosen.token, token: d.tokens[chosen.token],
      value: figureSaid(d.across[chosen.unit][chosen.token]) });
  }

  function choose(next) {
    const same = next && chosen && next.unit === chosen.unit && next.token === chosen.token;
    if (same || (!next && !chosen)) return;
    chosen = next;
    show();
  }

  plot.addEventListener("mousemove", (event) => {
    const d = state.data;
    if (!d) return;
    const box = plot.getBoundingClientRect();
    const seen = event.clientX - box.left;
    const x = rightToLeft() ? state.width - seen : seen; // as drawn left to right
    const unit = Math.floor((event.clientY - box.top - state.top) / UNITS_ROW);
    if (unit < 0 || unit >= d.units.length) return;
    if (x >= 0 && x <= state.barsRight + state.gap / 2) {
      choose({ unit, token: d.token }); // a bar: its unit on the outlined token
    } else if (x >= state.heatLeft && x <= state.heatRight) {
      const token = Math.min(d.tokens.length - 1, Math.floor((x - state.heatLeft) / state.band));
      choose({ unit, token });
    }
  });

  plot.addEventListener("keydown", (event) => {
    const d = state.data;
    if (!d || event.altKey || event.ctrlKey || event.metaKey) return;
    const lastToken = d.tokens.length - 1;
    const lastUnit = d.units.length - 1;
    const at = chosen || { unit: 0, token: d.token };
    let next;
    if (event.key in UNITS_ARROWS) {
      const [down, along] = UNITS_ARROWS[event.key];
      next = chosen ? {
        unit: Math.min(lastUnit, Math.max(0, at.unit + down)),
        token: Math.min(lastToken, Math.max(0, at.token + along * (rightToLeft() ? -1 : 1))),
      } : at; // the first key: the outlined token's largest unit
    } else if (event.key === "Home" || event.key === "End") {
      next = { unit: at.unit, token: event.key === "Home" ? 0 : lastToken };
    } else if (event.key === "PageUp" || event.key === "PageDown") {
      next = { unit: event.key === "PageUp" ? 0 : lastUnit, token: at.token };
    } else if (event.key === "Escape" && chosen) {
      next = null;
    } else {
      return;
    }
    event.preventDefault();
    choose(next);
  });

  function label(d) {
    let most = 0;
    d.values.forEach((v, i) => { if (v > d.values[most]) most = i; });
    const units = n_("{count} unit", "{count} units", d.units.length);
    const tokens = n_("{count} token", "{count} tokens", d.tokens.length);
    return _("Bars of {units}, the most active on “{token}” (position {position}), and a heatmap "
      + "of the same units on {tokens}; the largest is {unit}, {value}. ↑ and ↓ choose a unit, "
      + "← and → a token, Home the first token, End the last; the value is read below the plot.", {
      units, tokens, token: d.tokens[d.token], position: d.token, unit: d.units[most],
      value: figureSaid(d.values[most]) });
  }

  const resizing = watchWidth(root, () => state.data && draw());

  function update(next) {
    const problem = unitsProblem(next);
    frameFor(next, { root, title, plot, tools }, () => _("heatmap"));
    message.textContent = problem;
    notes.replaceChildren(...(next && Array.isArray(next.notes) ? next.notes : [])
      .map((note) => element("div", {}, note)));
    state.data = problem ? null : next;
    root.dataset.units = state.data ? String(next.units.length) : "0";
    root.dataset.tokens = state.data ? String(next.tokens.length) : "0";
    plot.setAttribute("aria-label", state.data ? label(state.data) : problem);
    if (chosen && (!state.data || chosen.unit >= next.units.length
      || chosen.token >= next.tokens.length)) chosen = null;
    resizing.drawn();
    draw();
    if (!state.data) show();
    tools.refresh(); // an open table follows the data
  }

  update(data);
  return {
    update,
    destroy() {
      resizing.stop();
      root.remove();
    },
  };
}
