/**
 * Token lines: a few statistics of several series over one sentence's tokens, one plot a
 * statistic, stacked on one token axis, drawn as SVG (the LayerNorm view's figure: each norm's
 * input and output, their mean and their std per token).
 *
 * An ES module, no framework, no network: each host's glue calls `mount`, the whole joined
 * into one file per host (encoder/web/hosts.py).
 * The stylesheet is token_lines.css beside this file.
 *
 *   const chart = mount(host, data);   // host: an element or shadow root
 *   chart.update(newData);             // another sentence, layer or language
 *   chart.destroy();
 *
 * data (token_lines.py beside it: layernorm_lines): {title, tokens: string[] (one per
 *        position), series: [{name, colour, dashed, open}],
 *        panels: [{title, short, values: number[series][position]}], lang?, words?}. Every word
 *        but the module's own (the readout's, the tools', the plot's label) comes translated;
 *        with `lang` and `words` (app.i18n.browser) the module's own are in that language too.
 * User text (tokens) is drawn with textContent only.
 *
 * Reading it: the mouse's position over the plot, or the keyboard (the plot is one Tab stop: ←
 * and → the previous and next token, in the direction they are drawn; Home the first, End the
 * last; Escape clears), chooses a token: a rule marks it in every plot and the readout below
 * gives every series's values there. In a right-to-left language the first token is on the
 * right and the values' axis on the right.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="token-lines"] role="figure", named by the title, with data-positions
 *            and data-series (how many), data-draw-ms (the last draw's time), data-token (the
 *            chosen position, "" when none), data-width (the width it was drawn for)
 *   plot     the svg [data-role="plot"]: tabindex="0", role="application",
 *            aria-roledescription, aria-label (what it shows and how to read it); inside it
 *            [data-role="panel"][data-panel=k] (a statistic's plot), [data-role="line"]
 *            [data-series=i] (one per series and panel), [data-role="tick"] (the token labels
 *            shown: data-position, and the whole token in data-token-text), [data-role="rule"] (the chosen token's mark, hidden when none) and the
 *            legend [data-role="legend"]
 *   readout  [data-role="readout"], aria-live="polite": the chosen token and every series's
 *            values at it
 *   tools    figure_tools.js's [data-testid=figure-text]: "Show as a table" (a row a token: its
 *            position, the token, every series's every statistic) and "Save as…" (the plot as SVG
 *            or PNG, the table as CSV)
 *   message  [data-role="message"]: why nothing is drawn
 */
import { element, rightToLeft, _, number } from "./shared.js";
import {
  figureSaid, svgNode, figureStep, FIGURE_INK, FIGURE_CHAR, wrapWords, niceScale, tokenLabel,
  figurePoint, mountFigure, angledRoom, tokenTick, gridTick, plotFrame, figurePath
} from "./figure_tools.js";

const LINES_TEXT = 14; // px: every label (none under 12 px: the page's rule)
const LINES_TITLE = 15; // px: each plot's title
const LINES_PANEL = 190; // px: each plot's height
const LINES_GAP = 44; // px: above each plot, its title
const LINES_MIN_WIDTH = 300; // px: narrower than this, drawn this wide (the page scrolls)
const LINES_MARKER = 3.5; // px: a point's radius

const linesPrompt = () =>
  _("Hover the plot, or Tab to it and use ← and →: every line's values at one token.");

/** Why `data` cannot be drawn, or "". */
function linesProblem(data) {
  const count = data && Array.isArray(data.tokens) ? data.tokens.length : 0;
  if (!count || !Array.isArray(data.series) || !data.series.length) return _("nothing to draw");
  for (const panel of data.panels || []) {
    const ok = panel.values.length === data.series.length
      && panel.values.every((row) => row.length === count);
    if (!ok) return `the plot "${panel.short}" does not have ${data.series.length} x ${count} values`;
  }
  return data.panels && data.panels.length ? "" : _("nothing to draw");
}

/** A statistic's value for the readout, as a figure's sentence writes it; "–" for none. */
const lineValue = (value) => (Number.isFinite(value) ? figureSaid(value) : "–");

/** Every token as a table's row: position, token, each series's each statistic. */
function linesTable(d) {
  if (!d) return { head: [_("position")], body: [] };
  const head = [_("position"), _("token")];
  for (const panel of d.panels) for (const s of d.series) head.push(`${s.name}, ${panel.short}`);
  const body = d.tokens.map((token, p) => {
    const row = [String(p), token];
    for (const panel of d.panels) for (const values of panel.values) row.push(values[p]);
    return row;
  });
  return { head, body };
}

/** The plot's label: what it shows and how to read it. */
function linesLabel(d) {
  const statistics = d.panels.map((panel) => panel.short).join(", ");
  return _("Line chart of {series} lines over {tokens} tokens, one plot for each of: "
    + "{statistics}. ← and → choose a token, Home the first, End the last; its values are "
    + "read below the plot.", { series: number(d.series.length), tokens: number(d.tokens.length),
    statistics });
}

/** The legend's entries in rows across `width`: its height. */
function drawLegend(into, d, width, rtl) {
  const legend = svgNode("g", { "data-role": "legend" });
  const longest = Math.max(...d.series.map((s) => [...s.name].length));
  const column = Math.ceil(longest * FIGURE_CHAR * LINES_TEXT) + 46;
  const columns = Math.max(1, Math.floor(width / column));
  d.series.forEach((s, i) => {
    const row = Math.floor(i / columns);
    const slot = i % columns;
    const x0 = rtl ? width - slot * column : slot * column;
    const y = 14 + row * (LINES_TEXT + 10);
    const sign = rtl ? -1 : 1;
    legend.append(
      svgNode("line", { x1: x0, x2: x0 + sign * 28, y1: y - 4, y2: y - 4, stroke: s.colour,
        "stroke-width": 2, "stroke-dasharray": s.dashed ? "3 3" : "none" }),
      svgNode("circle", { cx: x0 + sign * 14, cy: y - 4, r: LINES_MARKER, stroke: s.colour,
        "stroke-width": 1.5, fill: s.open ? "#ffffff" : s.colour }),
      svgNode("text", { x: x0 + sign * 36, y, direction: rtl ? "rtl" : "ltr",
        "font-size": LINES_TEXT }, s.name),
    );
  });
  into.appendChild(legend);
  return Math.ceil(d.series.length / columns) * (LINES_TEXT + 10) + 8;
}

/** `d` drawn into `canvas`, `width` px wide (what the choice needs kept in `state`): its
 * height. */
function drawFigure(state, canvas, d, width) {
  const at = linesLayout(d, width, drawLegend(canvas, d, width, rightToLeft()));
  const rule = svgNode("line", { "data-role": "rule", stroke: FIGURE_INK, "stroke-width": 1.5,
    y1: at.legendHeight, y2: at.height - at.labels, visibility: "hidden" });
  d.panels.forEach((panel, k) => drawPanel(canvas, d, at, k));
  // the token labels, as many as fit side by side at an angle
  // as many labels as fit at 45°: each a line of text (about 1.5 its size) from the next
  const count = d.tokens.length;
  const every = Math.max(1, Math.ceil(count / Math.max(1, Math.floor(at.plotWidth / (LINES_TEXT * 1.5)))));
  const base = at.height - at.labels + 8;
  for (let p = 0; p < count; p += every) {
    canvas.appendChild(tokenTick(d.tokens, p, at.xOf(p), base, LINES_TEXT));
  }
  canvas.appendChild(rule);
  Object.assign(state, { xOf: at.xOf, band: at.band, plotLeft: at.left,
    plotRight: at.left + at.plotWidth, rule });
  return at.height;
}

/** Where the plots go, `width` px wide under a legend `legendHeight` tall: their scales, their
 * left edge and width, a token's band and x, each plot's title lines and top, the height. */
function linesLayout(d, width, legendHeight) {
  const rtl = rightToLeft();
  const scales = d.panels.map((panel) => {
    const all = panel.values.flat().filter(Number.isFinite);
    return niceScale(Math.min(...all), Math.max(...all));
  });
  const widest = Math.max(...scales.flatMap((s) => s.ticks.map((t) => number(t, s.digits, false).length)));
  const axis = Math.ceil(widest * FIGURE_CHAR * LINES_TEXT) + 14; // the values' labels
  const [left, right] = rtl ? [12, axis] : [axis, 12];
  const plotWidth = width - left - right;
  const band = plotWidth / d.tokens.length;
  const xOf = (p) => (rtl ? left + plotWidth - (p + 0.5) * band : left + (p + 0.5) * band);
  const longest = Math.max(...d.tokens.map((t) => [...tokenLabel(t)].length));
  const labels = angledRoom(longest, LINES_TEXT);
  // each plot's title, in as many lines as its width needs (a phone's 360 px: two)
  const titleLines = d.panels.map((panel) => wrapWords(panel.title,
    Math.floor(plotWidth / (FIGURE_CHAR * LINES_TITLE * 1.08))));
  const line = LINES_TITLE + 4;
  const tops = []; // each plot's top
  let below = legendHeight;
  for (const lines of titleLines) {
    below += LINES_GAP + (lines.length - 1) * line;
    tops.push(below);
    below += LINES_PANEL;
  }
  return { rtl, scales, left, plotWidth, band, xOf, labels, titleLines, line, tops, legendHeight,
    height: below + labels };
}

/** Plot `k`: its title, its values' grid, a line a series, its frame. */
function drawPanel(canvas, d, at, k) {
  const { rtl, left, plotWidth, line } = at;
  const [panel, scale, top] = [d.panels[k], at.scales[k], at.tops[k]];
  const yOf = (v) => top + LINES_PANEL - ((v - scale.low) / (scale.high - scale.low)) * LINES_PANEL;
  const group = svgNode("g", { "data-role": "panel", "data-panel": k });
  at.titleLines[k].forEach((words, j, all) => {
    group.appendChild(svgNode("text", { x: left + plotWidth / 2,
      y: top - 12 - (all.length - 1 - j) * line, "text-anchor": "middle",
      direction: rtl ? "rtl" : "ltr", "font-size": LINES_TITLE, "font-weight": 600 }, words));
  });
  for (const tick of scale.ticks) {
    group.append(...gridTick(left, left + plotWidth, yOf(tick), rtl ? left + plotWidth + 6 : left - 6,
      rtl ? "start" : "end", LINES_TEXT, number(tick, scale.digits, false)));
  }
  d.series.forEach((s, i) => group.appendChild(seriesLine(s, i, panel.values[i], at.xOf, yOf)));
  group.appendChild(plotFrame(left, top, plotWidth, LINES_PANEL));
  canvas.appendChild(group);
}

/** Series `s`'s line through its `values`, a marker at each. */
function seriesLine(s, i, values, xOf, yOf) {
  const line = svgNode("g", { "data-role": "line", "data-series": i });
  line.appendChild(svgNode("path", { d: figurePath(values, xOf, yOf), fill: "none",
    stroke: s.colour, "stroke-width": 2, "stroke-dasharray": s.dashed ? "3 3" : "none" }));
  values.forEach((v, p) => {
    if (!Number.isFinite(v)) return;
    line.appendChild(svgNode("circle", { cx: xOf(p).toFixed(1), cy: yOf(v).toFixed(1),
      r: LINES_MARKER, stroke: s.colour, "stroke-width": 1.5,
      fill: s.open ? "#ffffff" : s.colour }));
  });
  return line;
}

/** The rule and the readout at the chosen token. */
function showChosen({ root, readout, state }, chosen) {
  const d = state.data;
  root.dataset.token = chosen < 0 ? "" : String(chosen);
  if (state.rule) {
    state.rule.setAttribute("visibility", d && chosen >= 0 ? "visible" : "hidden");
    if (d && chosen >= 0) {
      const x = state.xOf(chosen).toFixed(1);
      state.rule.setAttribute("x1", x);
      state.rule.setAttribute("x2", x);
    }
  }
  readout.replaceChildren();
  if (!d || chosen < 0) {
    readout.textContent = d ? linesPrompt() : "";
    return;
  }
  readout.appendChild(element("div", { class: "tln-token" },
    _("“{token}”, position {position}", { token: d.tokens[chosen], position: chosen })));
  const table = element("table", { class: "tln-values" });
  const head = table.createTHead().insertRow();
  head.appendChild(element("th", { scope: "col" }, ""));
  for (const panel of d.panels) head.appendChild(element("th", { scope: "col" }, panel.short));
  const body = table.createTBody();
  d.series.forEach((s, i) => {
    const row = body.insertRow();
    const name = element("th", { scope: "row" });
    const swatch = element("span", { class: "tln-swatch", "aria-hidden": "true" });
    swatch.style.borderColor = s.colour;
    swatch.style.borderStyle = s.dashed ? "dotted" : "solid";
    name.append(swatch, document.createTextNode(s.name));
    row.appendChild(name);
    for (const panel of d.panels) row.appendChild(element("td", {}, lineValue(panel.values[i][chosen])));
  });
  readout.appendChild(table);
}

export function mount(host, data) {
  let chosen = -1; // a token's position
  const { root, plot, readout, state, start } = mountFigure(host, {
    name: "tln", testid: "token-lines", choice: "token", untitled: "lines",
    minWidth: LINES_MIN_WIDTH, role: () => _("line chart"), problem: linesProblem,
    counts: { positions: (d) => d.tokens.length, series: (d) => d.series.length },
    label: linesLabel, table: linesTable,
    forget: (d) => { if (chosen >= (d ? d.tokens.length : 0)) chosen = -1; },
    draw: (canvas, d, width) => drawFigure(state, canvas, d, width),
    show: () => show(), choose,
    key: (event, d) => figureStep(event, chosen, d.tokens.length - 1),
  });

  const show = () => showChosen({ root, readout, state }, chosen);

  function choose(position) {
    if (position === chosen) return;
    chosen = position;
    show();
  }

  plot.addEventListener("mousemove", (event) => {
    if (!state.data) return;
    const { x } = figurePoint(plot, state, event);
    if (x < state.plotLeft || x > state.plotRight) return;
    const along = rightToLeft() ? state.plotRight - x : x - state.plotLeft;
    choose(Math.min(state.data.tokens.length - 1, Math.floor(along / state.band)));
  });

  return start(data);
}
