/**
 * Value histogram: how many of a block's values before the activation fall in each bin, the bins
 * below 0 in their own colour, with the activation function f(x) drawn over them on a second
 * axis whose 0 lines up with the bars' base, drawn as SVG (the Activations view's figure).
 *
 * An ES module, no framework, no network: each host's glue calls `mount`, the whole joined
 * into one file per host (encoder/web/hosts.py). The stylesheet is value_histogram.css
 * beside this file.
 *
 *   const chart = mount(host, data);   // host: an element or shadow root
 *   chart.update(newData);             // another sentence, layer or language
 *   chart.destroy();
 *
 * data (value_histogram.py beside it: value_histogram_data): {title, notes: string[] (the lines
 *        under the title), name (the activation's: "GELU"), edges: number[bins + 1] (increasing),
 *        counts: number[bins], curve: {x: number[], y: number[]} (f(x), x increasing),
 *        ranges: {counts: [low, high], curve: [low, high]} (the left and right axes, their zeros
 *        on one line), colours: {below, above, curve}, labels: {below, above, curve (the
 *        legend's), x, counts, values (the axes' titles)}, lang?, words?}. Every word but the
 *        module's own (the readout's, the tools', the plot's label) comes translated; with `lang`
 *        and `words` (app.i18n.browser) the module's own are in that language too. Text is drawn
 *        with textContent only.
 *
 * Reading it: the mouse's position over the plot, or the keyboard (the plot is one Tab stop: ←
 * and → the bin beside the chosen one, in the direction they are drawn; Home the first (most
 * negative), End the last; Escape clears), chooses a bin: an outline marks it, a dot marks f at
 * its middle, and the readout below gives its range, its count and f at its middle. In a
 * right-to-left language the most negative bin is on the right, the counts' axis on the right and
 * f's on the left.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="value-histogram"] role="figure", named by the title, with data-bins
 *            (how many), data-draw-ms (the last draw's time), data-bin (the chosen bin, "" when
 *            none), data-width (the width it was drawn for)
 *   notes    [data-role="note"]: each line under the title
 *   plot     the svg [data-role="plot"]: tabindex="0", role="application",
 *            aria-roledescription, aria-label (what it shows and how to read it); inside it
 *            [data-role="bar"][data-bin=i] (a rect a bin), [data-role="curve"] (f's path),
 *            [data-role="zero"] (the dotted line at x = 0), [data-role="tick"] (the x axis's
 *            labels: data-value), [data-role="outline"] and [data-role="point"] (the chosen bin's
 *            marks, hidden when none) and the legend [data-role="legend"]
 *   readout  [data-role="readout"], aria-live="polite": the chosen bin's range and count, and f
 *            at its middle
 *   tools    figure_tools.js's [data-testid=figure-text]: "Show as a table" (a row a bin: from,
 *            to, count) and "Save as…" (the plot with its title and notes as SVG or PNG, the
 *            table as CSV)
 *   message  [data-role="message"]: why nothing is drawn
 */
import { element, rightToLeft, _, n_, number } from "./shared.js";
import {
  figureSaid, svgNode, figureStep, FIGURE_INK, FIGURE_CHAR, figurePoint, mountFigure, gridTick,
  plotFrame, figurePath
} from "./figure_tools.js";

const HIST_TEXT = 14; // px: every label (none under 12 px: the page's rule)
const HIST_PLOT = 300; // px: the plot's height
const HIST_MIN_WIDTH = 300; // px: narrower than this, drawn this wide (the page scrolls)
const HIST_ZERO = "#6f6f6f"; // the x = 0 line: 5.0:1 on white

const histPrompt = () =>
  _("Hover the bars, or Tab to the plot and use ← and →: how many values each bin holds.");

/** Why `data` cannot be drawn, or "". */
function histProblem(data) {
  const bins = data && Array.isArray(data.counts) ? data.counts.length : 0;
  if (!bins || !Array.isArray(data.edges) || !data.curve) return _("nothing to draw");
  if (data.edges.length !== bins + 1) {
    return `the histogram has ${bins} counts for ${data.edges.length} edges, not ${bins + 1}`;
  }
  if (!data.edges.every((e, i) => Number.isFinite(e) && (i === 0 || e > data.edges[i - 1]))) {
    return "the histogram's edges are not increasing numbers";
  }
  const { x, y } = data.curve;
  if (!Array.isArray(x) || !Array.isArray(y) || !x.length || x.length !== y.length) {
    return `the curve has ${Array.isArray(x) ? x.length : 0} x and ${Array.isArray(y) ? y.length : 0} y values`;
  }
  const ok = (range) => Array.isArray(range) && range.length === 2 && range.every(Number.isFinite)
    && range[1] > range[0];
  if (!data.ranges || !ok(data.ranges.counts) || !ok(data.ranges.curve)) {
    return "the histogram's axes have no ranges";
  }
  return "";
}

/** The round steps (1, 2 or 5 times a power of ten) from the first at least `raw`, smallest
 * first. */
function histSteps(raw, count = 12) {
  if (!(raw > 0 && Number.isFinite(raw))) return [1];
  let power = 10 ** Math.floor(Math.log10(raw));
  const steps = [];
  while (steps.length < count) {
    steps.push(...[1, 2, 5].map((k) => Number((k * power).toPrecision(12))).filter((s) => s >= raw));
    power *= 10;
  }
  return steps.slice(0, count);
}

/** The multiples of `step` within [low, high]: {ticks, digits} (the decimals they need). */
function histTicksEvery(low, high, step) {
  const ticks = [];
  for (let k = Math.ceil(low / step - 1e-9); k * step <= high + step * 1e-9; k += 1) {
    ticks.push(Number((k * step).toPrecision(12)));
  }
  return { ticks, digits: Math.max(0, -Math.floor(Math.log10(step) + 1e-9)) };
}

/** Round steps about (high - low) / count apart within [low, high] (whole numbers when
 * `whole`): {ticks, digits}. */
function histTicks(low, high, count, whole = false) {
  if (!(high > low)) return { ticks: [low], digits: 0 };
  const step = histSteps((high - low) / Math.max(1, count), 1)[0];
  return histTicksEvery(low, high, whole ? Math.max(1, Math.round(step)) : step);
}

/** f at `at` from the curve's points, straight between them (as numpy's interp: the end values
 * beyond the ends). */
function histCurveAt(curve, at) {
  const { x, y } = curve;
  const last = x.length - 1;
  if (at <= x[0]) return y[0];
  if (at >= x[last]) return y[last];
  let [low, high] = [0, last];
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (x[middle] <= at) low = middle;
    else high = middle;
  }
  if (x[low] === at) return y[low];
  return ((y[low + 1] - y[low]) / (x[low + 1] - x[low])) * (at - x[low]) + y[low];
}

/** Every bin as a table's row: from, to, count. */
function histTable(d) {
  if (!d) return { head: [_("from")], body: [] };
  return {
    head: [_("from"), _("to"), d.labels.counts],
    body: d.counts.map((count, i) => [d.edges[i], d.edges[i + 1], count]),
  };
}

/** The plot's label: what it shows and how to read it. */
function histLabel(d) {
  const bins = d.counts.length;
  const total = d.counts.reduce((sum, c) => sum + c, 0);
  const below = d.counts.reduce((sum, c, i) => sum + ((d.edges[i] + d.edges[i + 1]) / 2 < 0 ? c : 0), 0);
  // each count with its noun in the language's plural (Arabic: 3 to 10 take another form)
  const values = n_("{count} value", "{count} values", total);
  const binned = n_("{count} bin", "{count} bins", bins);
  return _("Histogram of {values} in {bins}, x from {low} to {high}; {below} of them in the bins "
    + "below 0; the curve is {name}(x), on the other axis. ← and → choose a bin, Home the "
    + "first, End the last; its count is read below the plot.", {
    values, bins: binned, low: figureSaid(d.edges[0]), high: figureSaid(d.edges[bins]),
    below: number(below), name: d.name });
}

/** The legend's entries, as many in a row as fit across `width`: its height. */
function drawLegend(into, d, width, rtl) {
  const legend = svgNode("g", { "data-role": "legend" });
  // labels.curve names f's axis "right": in a right-to-left drawing it is on the left, and the
  // entry is f's name alone (the axis's title)
  const entries = [["bar", d.colours.below, d.labels.below],
    ["bar", d.colours.above, d.labels.above],
    ["line", d.colours.curve, rtl ? d.labels.values : d.labels.curve]];
  const sign = rtl ? -1 : 1;
  let [along, row] = [0, 0];
  for (const [kind, colour, text] of entries) {
    const span = 36 + Math.ceil([...text].length * FIGURE_CHAR * HIST_TEXT) + 24;
    if (along && along + span > width) [along, row] = [0, row + 1];
    const x0 = rtl ? width - along : along;
    const y = 14 + row * (HIST_TEXT + 10);
    legend.appendChild(kind === "bar"
      ? svgNode("rect", { x: rtl ? x0 - 28 : x0, y: y - 11, width: 28, height: 12, fill: colour })
      : svgNode("line", { x1: x0, x2: x0 + sign * 28, y1: y - 5, y2: y - 5, stroke: colour,
        "stroke-width": 3 }));
    legend.appendChild(svgNode("text", { x: x0 + sign * 36, y, direction: rtl ? "rtl" : "ltr",
      "font-size": HIST_TEXT }, text));
    along += span;
  }
  into.appendChild(legend);
  return (row + 1) * (HIST_TEXT + 10) + 10;
}

/** `d` drawn into `canvas`, `width` px wide (what the choice needs kept in `state`): its
 * height. */
function drawFigure(state, canvas, d, width) {
  const at = histLayout(d, width, drawLegend(canvas, d, width, rightToLeft()));
  drawValueAxes(canvas, d, at);
  drawBars(canvas, d, at);
  drawXAxis(canvas, d, at);
  // the chosen bin's marks, on top
  const outline = svgNode("rect", { "data-role": "outline", fill: "none", stroke: FIGURE_INK,
    "stroke-width": 2.5, visibility: "hidden" });
  const point = svgNode("circle", { "data-role": "point", r: 5, fill: "#ffffff",
    stroke: d.colours.curve, "stroke-width": 2.5, visibility: "hidden" });
  canvas.append(outline, point);
  const { xOf, yCount, yCurve, low, high, left, plotWidth } = at;
  Object.assign(state, { xOf, yCount, yCurve, low, high, plotLeft: left,
    plotRight: left + plotWidth, outline, point });
  return at.height;
}

/** Where the plot goes, `width` px wide under a legend `legendHeight` tall: its x range, both
 * value axes' ticks and labels, its edges, its scales and the height. */
function histLayout(d, width, legendHeight) {
  const rtl = rightToLeft();
  const { edges, counts, curve, ranges } = d;
  const low = Math.min(edges[0], curve.x[0]);
  const high = Math.max(edges[counts.length], curve.x[curve.x.length - 1]);
  const countTicks = histTicks(0, ranges.counts[1], 5, true);
  const curveTicks = histTicks(ranges.curve[0], ranges.curve[1], 6);
  const said = (ticks) => ticks.ticks.map((t) => number(t, ticks.digits, false));
  const [countLabels, curveLabels] = [said(countTicks), said(curveTicks)];
  // an axis's room: its widest label, a gap, its title turned on its side
  const room = (labels) =>
    Math.ceil(Math.max(...labels.map((l) => l.length)) * FIGURE_CHAR * HIST_TEXT) + 16 + HIST_TEXT + 8;
  const [countRoom, curveRoom] = [room(countLabels), room(curveLabels)];
  const [left, right] = rtl ? [curveRoom, countRoom] : [countRoom, curveRoom];
  const plotWidth = width - left - right;
  const xOf = (v) => {
    const along = ((v - low) / (high - low)) * plotWidth;
    return rtl ? left + plotWidth - along : left + along;
  };
  const top = legendHeight + 10;
  const bottom = top + HIST_PLOT;
  const yOf = (range) => (v) => bottom - ((v - range[0]) / (range[1] - range[0])) * HIST_PLOT;
  return { rtl, width, low, high, countTicks, curveTicks, countLabels, curveLabels, left,
    plotWidth, xOf, top, bottom, height: bottom + 2 * HIST_TEXT + 30,
    yCount: yOf(ranges.counts), yCurve: yOf(ranges.curve) };
}

/** The counts' grid and labels on their side, f's labels on the other, each axis's title. */
function drawValueAxes(canvas, d, at) {
  const { rtl, left, plotWidth, top, width } = at;
  const [countX, curveX] = rtl ? [left + plotWidth + 6, left - 6] : [left - 6, left + plotWidth + 6];
  at.countTicks.ticks.forEach((tick, i) => {
    canvas.append(...gridTick(left, left + plotWidth, at.yCount(tick), countX,
      rtl ? "start" : "end", HIST_TEXT, at.countLabels[i]));
  });
  at.curveTicks.ticks.forEach((tick, i) => {
    const y = at.yCurve(tick);
    canvas.append(
      svgNode("line", { x1: curveX + (rtl ? 2 : -2), x2: curveX + (rtl ? 6 : -6), y1: y, y2: y,
        stroke: "#8c8c8c" }),
      svgNode("text", { x: curveX + (rtl ? -2 : 2), y: y + HIST_TEXT * 0.35,
        "font-size": HIST_TEXT, "text-anchor": rtl ? "end" : "start" }, at.curveLabels[i]),
    );
  });
  const side = (x, text) => svgNode("text", { x, y: top + HIST_PLOT / 2, "font-size": HIST_TEXT,
    "text-anchor": "middle", direction: rtl ? "rtl" : "ltr",
    transform: `rotate(-90 ${x} ${top + HIST_PLOT / 2})` }, text);
  const [countTitleX, curveTitleX] = rtl ? [width - 6, HIST_TEXT + 2] : [HIST_TEXT + 2, width - 6];
  canvas.append(side(countTitleX, d.labels.counts), side(curveTitleX, d.labels.values));
}

/** The bars from the base up, the base, x = 0's line, f's curve and the plot's frame. */
function drawBars(canvas, d, at) {
  const { edges, counts, curve } = d;
  const { xOf, yCount, left, plotWidth, top, bottom } = at;
  const base = yCount(0);
  const bars = svgNode("g", { "data-role": "bars" });
  counts.forEach((count, i) => {
    const [a, b] = [xOf(edges[i]), xOf(edges[i + 1])];
    const below = (edges[i] + edges[i + 1]) / 2 < 0;
    bars.appendChild(svgNode("rect", { "data-role": "bar", "data-bin": i,
      x: Math.min(a, b).toFixed(2), width: Math.abs(b - a).toFixed(2),
      y: yCount(count).toFixed(2), height: (base - yCount(count)).toFixed(2),
      fill: below ? d.colours.below : d.colours.above, stroke: "#ffffff", "stroke-width": 0.5 }));
  });
  canvas.appendChild(bars);
  canvas.appendChild(svgNode("line", { x1: left, x2: left + plotWidth, y1: base, y2: base,
    stroke: FIGURE_INK }));
  if (at.low <= 0 && 0 <= at.high) {
    const x = xOf(0).toFixed(2);
    canvas.appendChild(svgNode("line", { "data-role": "zero", x1: x, x2: x, y1: top, y2: bottom,
      stroke: HIST_ZERO, "stroke-width": 1.5, "stroke-dasharray": "2 3" }));
  }
  canvas.appendChild(svgNode("path", { "data-role": "curve",
    d: figurePath(curve.y, (i) => xOf(curve.x[i]), at.yCurve), fill: "none",
    stroke: d.colours.curve, "stroke-width": 3, "stroke-linejoin": "round" }));
  canvas.appendChild(plotFrame(left, top, plotWidth, HIST_PLOT));
}

/** The x axis: round values, a label every 70 px at most, as many as fit side by side (two at
 * least where they fit), then its title. */
function drawXAxis(canvas, d, at) {
  const { low, high, plotWidth, bottom } = at;
  const most = Math.max(2, Math.floor(plotWidth / 70));
  const fits = (t) => t.ticks.length * (Math.max(...t.ticks.map((v) =>
    number(v, t.digits, false).length)) * FIGURE_CHAR * HIST_TEXT + 18) <= plotWidth;
  let [ticks, denser] = [null, null]; // denser: the last that fits, at more than `most`
  for (const step of histSteps((high - low) / (most * 3))) {
    const next = histTicksEvery(low, high, step);
    if (!fits(next)) continue;
    if (next.ticks.length <= most) {
      ticks = next.ticks.length >= 2 || !denser ? next : denser;
      break;
    }
    denser = next;
  }
  ticks = ticks || denser || histTicksEvery(low, high, histSteps(high - low, 1)[0]);
  for (const tick of ticks.ticks) {
    const x = at.xOf(tick);
    canvas.append(
      svgNode("line", { x1: x, x2: x, y1: bottom, y2: bottom + 5, stroke: "#8c8c8c" }),
      svgNode("text", { "data-role": "tick", "data-value": tick, x, y: bottom + 6 + HIST_TEXT,
        "font-size": HIST_TEXT, "text-anchor": "middle" }, number(tick, ticks.digits, false)),
    );
  }
  canvas.appendChild(svgNode("text", { x: at.left + plotWidth / 2, y: at.height - 8,
    "font-size": HIST_TEXT, "text-anchor": "middle", direction: at.rtl ? "rtl" : "ltr" },
  d.labels.x));
}

/** The marks and the readout at the chosen bin. */
function showChosen({ root, readout, state }, chosen) {
  const d = state.data;
  root.dataset.bin = chosen < 0 ? "" : String(chosen);
  const on = Boolean(d && chosen >= 0);
  if (state.outline) {
    state.outline.setAttribute("visibility", on ? "visible" : "hidden");
    state.point.setAttribute("visibility", on ? "visible" : "hidden");
  }
  readout.replaceChildren();
  if (!on) {
    readout.textContent = d ? histPrompt() : "";
    return;
  }
  const [from, to, count] = [d.edges[chosen], d.edges[chosen + 1], d.counts[chosen]];
  const middle = (from + to) / 2;
  const value = histCurveAt(d.curve, middle);
  if (state.outline) {
    const [a, b] = [state.xOf(from), state.xOf(to)];
    const y = Math.min(state.yCount(count), state.yCount(0) - 2);
    state.outline.setAttribute("x", Math.min(a, b).toFixed(2));
    state.outline.setAttribute("width", Math.abs(b - a).toFixed(2));
    state.outline.setAttribute("y", y.toFixed(2));
    state.outline.setAttribute("height", (state.yCount(0) - y).toFixed(2));
    state.point.setAttribute("cx", state.xOf(middle).toFixed(2));
    state.point.setAttribute("cy", state.yCurve(value).toFixed(2));
  }
  readout.append(
    element("div", { class: "vhs-bin" }, n_("x from {low} to {high}: {count} value",
      "x from {low} to {high}: {count} values", count,
      { low: figureSaid(from), high: figureSaid(to) })),
    element("div", { class: "vhs-value" }, _("{name}(x) at {x}: {value}",
      { name: d.name, x: figureSaid(middle), value: figureSaid(value) })),
  );
}

export function mount(host, data) {
  let chosen = -1; // a bin
  const { root, plot, readout, state, start } = mountFigure(host, {
    name: "vhs", testid: "value-histogram", choice: "bin", untitled: "histogram",
    minWidth: HIST_MIN_WIDTH, role: () => _("histogram"), problem: histProblem,
    // the title and its notes come written: each line takes its direction from its words
    written: true,
    note: (note) => element("div", { class: "vhs-note", "data-role": "note", dir: "auto" },
      String(note)),
    counts: { bins: (d) => d.counts.length },
    label: histLabel, table: histTable,
    forget: (d) => { if (chosen >= (d ? d.counts.length : 0)) chosen = -1; },
    draw: (canvas, d, width) => drawFigure(state, canvas, d, width),
    show: () => show(), choose,
    key: (event, d) => figureStep(event, chosen, d.counts.length - 1),
  });

  const show = () => showChosen({ root, readout, state }, chosen);

  function choose(bin) {
    if (bin === chosen) return;
    chosen = bin;
    show();
  }

  plot.addEventListener("mousemove", (event) => {
    const d = state.data;
    if (!d) return;
    const { x } = figurePoint(plot, state, event);
    if (x < state.plotLeft || x > state.plotRight) return;
    const along = rightToLeft() ? state.plotRight - x : x - state.plotLeft;
    const at = state.low + (along / (state.plotRight - state.plotLeft)) * (state.high - state.low);
    const bins = d.counts.length;
    if (at < d.edges[0] || at > d.edges[bins]) return;
    let bin = 0;
    while (bin < bins - 1 && d.edges[bin + 1] <= at) bin += 1;
    choose(bin);
  });

  return start(data);
}
