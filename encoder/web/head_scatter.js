/**
 * Head scatter: one head's queries and keys from a whole corpus, in one plane (AttentionViz).
 *
 * Plain ES module, no framework, no build step, no network. Hosts load it joined after shared.js
 * (element, viridis, rgb, OKABE_ITO) and before their glue, which calls `mount`
 * (encoder/web/hosts.py). The stylesheet is head_scatter.css beside this file.
 *
 *   const scatter = mount(host, data, {colour});   // host: an element or shadow root
 *   scatter.update(newData);   // another head or corpus; the colouring is kept
 *   scatter.destroy();
 *
 * data: {title, x: number[], y: number[], role: (0 query | 1 key)[], sentence: int[],
 *        position: int[], kind: int[], kinds: string[], tokens: string[] (one per point),
 *        sentences: string[]}: every array of x's length but kinds and sentences.
 * User text (tokens, sentences) is drawn with textContent only.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="head-scatter"] with data-points (how many), data-colour
 *            ("position" | "kind" | "role"), data-draw-ms (the last draw's time), data-hover
 *            (the hovered point's index, "" when none), data-hover-token, data-hover-role,
 *            data-hover-sentence (its sentence's index)
 *   buttons  [data-role="colour"][data-colour=...][aria-pressed]
 *   plane    the canvas [data-role="plane"] (hover: the nearest point within HOVER_PX)
 *   hover    [data-role="hover"]: the token, query or key, its position and its sentence
 *   legend   [data-role="legend"]
 *   message  [data-role="message"]: why nothing is drawn
 */

const SIZE = 560; // px, the plane's side
const PAD = 12;
const HOVER_PX = 8;
const CELL = 16; // px per bucket of the hover grid
const KIND_COLOURS = ["vermillion", "blue", "orange", "green", "purple", "skyBlue"]
  .map((name) => OKABE_ITO[name]);
const ROLE_COLOURS = [OKABE_ITO.green, OKABE_ITO.purple]; // query, key
const ROLES = ["query", "key"];
const COLOURINGS = ["position", "kind", "role"];

function check(data) {
  const n = data && data.x ? data.x.length : 0;
  if (!n) return "no points to draw";
  for (const name of ["y", "role", "sentence", "position", "kind", "tokens"]) {
    if (!data[name] || data[name].length !== n) return `the scatter's ${name} does not match its ${n} points`;
  }
  return "";
}

export function mount(host, data, options = {}) {
  const root = element("div", { class: "hsc", "data-testid": "head-scatter", "data-hover": "" });
  const bar = element("div", { class: "hsc-bar" });
  const title = element("span", { class: "hsc-title" });
  const buttons = element("span", { class: "hsc-group" });
  const canvas = element("canvas", { class: "hsc-plane", "data-role": "plane", width: SIZE,
    height: SIZE });
  const hover = element("div", { class: "hsc-hover", "data-role": "hover", "aria-live": "polite" });
  const legend = element("div", { class: "hsc-legend", "data-role": "legend" });
  const message = element("div", { class: "hsc-message", "data-role": "message" });
  const side = element("div", { class: "hsc-side" });
  const body = element("div", { class: "hsc-body" });
  bar.append(title, buttons);
  side.append(legend, hover);
  body.append(canvas, side);
  root.append(bar, message, body);
  host.appendChild(root);

  const ratio = window.devicePixelRatio || 1;
  canvas.width = SIZE * ratio;
  canvas.height = SIZE * ratio;
  canvas.style.width = `${SIZE}px`;
  canvas.style.height = `${SIZE}px`;
  const context = canvas.getContext("2d");
  context.scale(ratio, ratio);

  let state = { data: null, px: null, py: null, grid: null, maxPosition: 1 };
  let colour = COLOURINGS.includes(options.colour) ? options.colour : "position";

  for (const name of COLOURINGS) {
    const button = element("button", { type: "button", "data-role": "colour", "data-colour": name },
      `colour by ${name}`);
    button.addEventListener("click", () => {
      colour = name;
      draw();
    });
    buttons.appendChild(button);
  }

  function colourOf(i) {
    const d = state.data;
    if (colour === "role") return ROLE_COLOURS[d.role[i]];
    if (colour === "kind") return KIND_COLOURS[d.kind[i] % KIND_COLOURS.length];
    return rgb(viridis(d.position[i] / state.maxPosition));
  }

  function layout() {
    const d = state.data;
    const n = d.x.length;
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) {
      x0 = Math.min(x0, d.x[i]); x1 = Math.max(x1, d.x[i]);
      y0 = Math.min(y0, d.y[i]); y1 = Math.max(y1, d.y[i]);
    }
    const span = Math.max(x1 - x0, y1 - y0) || 1;
    const inner = SIZE - 2 * PAD;
    const px = new Float32Array(n), py = new Float32Array(n);
    const cells = Math.ceil(SIZE / CELL);
    const grid = Array.from({ length: cells * cells }, () => []);
    let maxPosition = 1;
    for (let i = 0; i < n; i++) {
      px[i] = PAD + ((d.x[i] - x0) / span) * inner;
      py[i] = SIZE - PAD - ((d.y[i] - y0) / span) * inner;
      const cx = Math.min(cells - 1, Math.floor(px[i] / CELL));
      const cy = Math.min(cells - 1, Math.floor(py[i] / CELL));
      grid[cy * cells + cx].push(i);
      maxPosition = Math.max(maxPosition, d.position[i]);
    }
    Object.assign(state, { px, py, grid, cells, maxPosition });
  }

  function drawLegend() {
    legend.replaceChildren();
    const entries = colour === "role"
      ? ROLES.map((r, k) => [r, ROLE_COLOURS[k]])
      : colour === "kind"
        ? state.data.kinds.map((k, i) => [k, KIND_COLOURS[i % KIND_COLOURS.length]])
        : [["first token", rgb(viridis(0))], [`position ${state.maxPosition}`, rgb(viridis(1))]];
    for (const [label, swatch] of entries) {
      const row = element("div", { class: "hsc-entry" });
      const dot = element("span", { class: "hsc-swatch" });
      dot.style.background = swatch;
      row.append(dot, element("span", {}, label));
      legend.appendChild(row);
    }
    legend.appendChild(element("div", { class: "hsc-entry" }, "● query   ○ key"));
  }

  function draw() {
    const start = performance.now();
    root.dataset.colour = colour;
    for (const button of buttons.children) {
      button.setAttribute("aria-pressed", String(button.dataset.colour === colour));
    }
    context.clearRect(0, 0, SIZE, SIZE);
    if (!state.data) return;
    const d = state.data;
    const n = d.x.length;
    context.lineWidth = 1.2;
    for (let i = 0; i < n; i++) { // queries filled, keys as rings, so both show where they mix
      const c = colourOf(i);
      context.beginPath();
      context.arc(state.px[i], state.py[i], 2.6, 0, 2 * Math.PI);
      if (d.role[i] === 0) {
        context.fillStyle = c;
        context.globalAlpha = 0.65;
        context.fill();
      } else {
        context.strokeStyle = c;
        context.globalAlpha = 0.8;
        context.stroke();
      }
    }
    context.globalAlpha = 1;
    drawLegend();
    root.dataset.drawMs = (performance.now() - start).toFixed(1);
  }

  function nearest(mx, my) {
    const { cells, grid, px, py } = state;
    const cx = Math.floor(mx / CELL), cy = Math.floor(my / CELL);
    let best = -1, bestDistance = HOVER_PX * HOVER_PX;
    for (let gy = cy - 1; gy <= cy + 1; gy++) {
      for (let gx = cx - 1; gx <= cx + 1; gx++) {
        if (gx < 0 || gy < 0 || gx >= cells || gy >= cells) continue;
        for (const i of grid[gy * cells + gx]) {
          const distance = (px[i] - mx) ** 2 + (py[i] - my) ** 2;
          if (distance <= bestDistance) { best = i; bestDistance = distance; }
        }
      }
    }
    return best;
  }

  function showHover(i) {
    root.dataset.hover = i < 0 ? "" : String(i);
    hover.replaceChildren();
    if (i < 0) {
      for (const name of ["hoverToken", "hoverRole", "hoverSentence"]) delete root.dataset[name];
      hover.textContent = "Hover a point: its token and its sentence.";
      return;
    }
    const d = state.data;
    root.dataset.hoverToken = d.tokens[i];
    root.dataset.hoverRole = ROLES[d.role[i]];
    root.dataset.hoverSentence = String(d.sentence[i]);
    const head = element("div", { class: "hsc-token" },
      `“${d.tokens[i]}” as a ${ROLES[d.role[i]]}, position ${d.position[i]} (${d.kinds[d.kind[i]]})`);
    const sentence = element("div", { class: "hsc-sentence" }, d.sentences[d.sentence[i]] ?? "");
    hover.append(head, sentence);
  }

  canvas.addEventListener("mousemove", (event) => {
    if (!state.data) return;
    const box = canvas.getBoundingClientRect();
    showHover(nearest(event.clientX - box.left, event.clientY - box.top));
  });
  canvas.addEventListener("mouseleave", () => showHover(-1));

  function update(next) {
    const problem = check(next);
    message.textContent = problem;
    root.dataset.points = problem ? "0" : String(next.x.length);
    title.textContent = next && next.title ? next.title : "";
    state.data = problem ? null : next;
    if (state.data) layout();
    draw();
    showHover(-1);
  }

  update(data);
  return {
    update,
    destroy() { root.remove(); },
  };
}
