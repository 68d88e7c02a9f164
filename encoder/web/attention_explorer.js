/**
 * Attention explorer: one run's attention, drawn and explored entirely in the browser.
 *
 * An ES module, no framework, no network. Hosts (Streamlit Custom Components v2, anywidget, an
 * offline file's module script) load it with what it imports and their glue (glue/*.js), which
 * calls `mount`, joined into one self-contained module (encoder/web/hosts.py). The stylesheet is
 * attention_explorer.css.
 *
 *   const explorer = mount(element, payloadBytes, {selection, onSelect});
 *   explorer.update(newPayloadBytes);   // a rerun's payload; the selection is kept
 *   explorer.destroy();
 *
 * payloadBytes: ArrayBuffer | Uint8Array | DataView, as encoder/web/payload.py writes it
 * ("AEX1", uint32 header length, JSON header, body of uint16 weights = value / 65535, float32
 * value norms). A header with "large_text": true draws every label at 16 px or more (presenter
 * mode); else no text is under 12 px.
 * selection: {layer, head, mode, setup, query} to start from (all optional; query: a pinned token).
 * A payload whose header has a "start" ({layer, head, mode, query}) opens there instead, and a
 * rerun's payload with another start moves the explorer there (the lesson's steps).
 * onSelect({layer, head, query, setup, mode, full}): called when the selection SETTLES (a new
 * head, a pin, a mode or setup), never on hover. `full` is false when the chosen head is only
 * drawn in blocks (long inputs): a host may then fetch it at full resolution.
 *
 * Layers and heads are numbered from 0, as on the page ("layer 2, head 1").
 *
 * Modes: lines (a window of WINDOW tokens around the chosen query once there are more than
 * LINES_ALL tokens, said above the lines; colours then stretched, as everywhere past LINES_ALL
 * tokens, where a weight is about 1/n), matrix (square cells filling the stage, labels beside
 * them while a cell is tall enough for text), every head (block tiles for long inputs), what it
 * moves (the chosen head's norm-weighted attention, ‖weight × f(key)‖: its weights times its keys'
 * value norms, colours stretched to the largest) and rollout (the attention rollout after the
 * chosen layer, or after the last one where only that one was sent).
 *
 * DOM contract (what tests and outside tools drive; it may sit inside a shadow root):
 *   root      [data-testid="attention-explorer"] with data-layer, data-head, data-query (the
 *             pinned or hovered query token's index, "" when none), data-pinned ("true"|"false"),
 *             data-setup ("A", "B" or "B-A"), data-mode ("lines", "matrix", "heads", "moves",
 *             "rollout"), data-large ("true"|"false"); focusable: ←/→ heads, PageUp/PageDown
 *             layers, ↑/↓ query tokens, Enter pins/unpins, Escape clears
 *   layer     [data-testid="explorer-layer"] (data-role="layer"): a select element of the layers
 *   window    [data-role="window"] in lines: which tokens are shown ("Tokens 120–147 of 502 …"),
 *             data-start and data-end (end exclusive); absent while every token is shown
 *   buttons   [data-role="mode"][data-mode=...], [data-role="setup"][data-setup=...]
 *   chips     [data-role="chip"][data-layer][data-head][aria-pressed]: heads overlaid in lines
 *   tokens    [data-side="query"|"key"][data-index] (lines and matrix labels), user text as text
 *   weights   [data-role="weight"] inside a key token: the selected head's weight for the query
 *   cells     the matrix canvas [data-role="matrix"] (hover a cell: readout), data-reading
 *             ("weights", "moves", "rollout"); the same canvas in the moves and rollout modes;
 *             data-window (the layer's local window, "0" when it is global) and data-masked
 *             (how many cells the window masks, drawn in MASKED_RGB grey, not a colour of the
 *             scale; "0" when none): a query sees only the keys within window / 2 positions
 *             (the payload's "windows"; B − A and the rollout mark none)
 *   tiles     [data-role="tile"][data-layer][data-head] canvases of every head; the chosen one
 *             has aria-current="true" (its outline is one element moved over it, so that a head
 *             switch repaints no tile)
 *   readout   [data-role="readout"] (aria-live): 'layer 2, head 1: "it" → "tired" 0.715', or
 *             '… "it" → "cat" outside the window (masked)' for a cell a local window masks
 *   message   [data-role="message"]: why something is not drawn (bad payload, B − A impossible)
 *   figure    [data-role="figure"] (the stage: lines, matrix, tiles), role="figure", aria-label: a
 *             sentence of the look's numbers, set when the look settles (never on hover):
 *             'Layer 2, head 1 of A: "it" gives 0.715 to "tired"; 11 of 16 tokens put most weight
 *             on "[CLS]".' (the query with the largest single weight, or the pinned one, and its
 *             top key; then the key most queries put their largest weight on); what a head moves
 *             ('What layer 2, head 1 of A moves: "it" moves 3.210 from …; … move most from …'),
 *             the rollout ('Rollout after layer 3 of A: "it" draws 0.500 on …; … draw most on …'),
 *             every head ('Every head of A (6 layers × 12 heads), layer 2, head 1 chosen: …'),
 *             B − A ('Layer 2, head 5 of B − A: the largest increase +0.120 at "it" → "cat", the
 *             largest decrease −0.080 at …'); numbers to 3 decimals, tokens as text
 *   legend    [data-role="legend"] under every colour scale: what it measures, its ends' numbers
 *             and a bar ("weight: 0 ▭ 0.715"; B − A: "weight: B less −0.3 ▭ +0.3 B more")
 *   signs     [data-role="signs"] over B − A's matrix while its cells are tall enough for text: a
 *             "+" or "−" on each cell whose |difference| is SIGN_MIN of the scale or more,
 *             data-signs (how many); B − A's readout and weights say their sign ("+0.120")
 *   dashes    each overlaid head's lines have their own dash (HEAD_DASHES) as well as colour; its
 *             chip holds a sample (svg line, stroke-dasharray) and data-dash
 *   text      figure_tools.js's box [data-testid="figure-text"] after the readout: "Show as a
 *             table" (the look's matrix: a row per query "index token", a column per key,
 *             figureRounded values, written as the language writes numbers ("0,0906" in
 *             Spanish; the CSV's in English); every head: the chosen head's; B − A: signed
 *             differences;
 *             redrawn when the look settles) and "Save as…" (CSV the same; SVG of the look,
 *             titled setup, input's first TITLE_CHARS characters, layer, head and mode: lines as
 *             SVG paths with their dashes, cells as an image, tokens as text; PNG from the SVG)
 */
import { element, speakWith, spoken, rightToLeft, _, n_ } from "./shared.js";
import { figureControls } from "./figure_tools.js";
import {
  decodePayload, fullWeights, movedWeights, rolloutWeights, tileWeights, outsideWindow, sameShape,
  difference,
} from "./explorer/payload.js";
import { LINES_ALL, SETTLE_MS, peak } from "./explorer/draw.js";
import { linesMode } from "./explorer/lines.js";
import { matrixMode } from "./explorer/matrix.js";
import { headsMode } from "./explorer/heads.js";
import { available, drawBar, drawChips, overlaid, shownName } from "./explorer/bar.js";
import { onKey } from "./explorer/keyboard.js";
import {
  describe, figureSentence, figureSvg, figureTable, figureTitle,
} from "./explorer/readout.js";

const MODES = { // in the bar's order
  lines: linesMode,
  matrix: (explorer) => matrixMode(explorer, "weights"),
  heads: headsMode,
  moves: (explorer) => matrixMode(explorer, "moves"),
  rollout: (explorer) => matrixMode(explorer, "rollout"),
};

// ---------------------------------------------------------------------------- the explorer

/** Draw `payload` into `host` (an element or shadow root); see the module doc. */
export function mount(host, payload, options = {}) {
  const onSelect = options.onSelect || (() => {});
  const start = options.selection || {};
  const state = {
    layer: 0, head: 0, mode: "lines", setup: start.setup || "A",
    hovered: null, // query token under the pointer or the keyboard's focus
    pinned: null,
    cell: null, // [query, key] under the pointer in the matrix
    overlay: [], // extra heads drawn in the lines view: [layer, head] pairs
  };
  /** Open at `at` ({layer, head, mode, query}, all optional). */
  function openAt(at) {
    state.layer = Number(at.layer) || 0;
    state.head = Number(at.head) || 0;
    state.mode = Object.hasOwn(MODES, at.mode) ? at.mode : "lines";
    state.pinned = Number.isInteger(at.query) && at.query >= 0 ? at.query : null;
    state.hovered = null;
    state.overlay = [];
  }
  openAt(start);
  let data = null;
  let settleTimer = null;
  let opened = null; // the payload start last opened at (JSON), so a rerun keeps the selection

  const root = element("div", { "data-testid": "attention-explorer", class: "aex", tabindex: "0",
    role: "application", "aria-label": "Attention explorer" });
  const bar = element("div", { class: "aex-bar" });
  const modeButtons = element("div", { class: "aex-group", role: "group", "aria-label": "View" });
  const setups = element("div", { class: "aex-group", role: "group", "aria-label": "Setup" });
  const layerPick = element("select", { "data-testid": "explorer-layer", "data-role": "layer",
    "aria-label": "Layer", class: "aex-layer" });
  layerPick.addEventListener("change", () => choose(Number(layerPick.value), state.head));
  const layerLabel = element("label", { class: "aex-layer-label" });
  const layerWord = document.createTextNode("Layer ");
  layerLabel.append(layerWord, layerPick);
  const title = element("div", { class: "aex-title" });
  bar.append(modeButtons, setups, layerLabel, title);
  const chips = element("div", { class: "aex-chips", role: "group", "aria-label": "Heads drawn" });
  const message = element("div", { class: "aex-message", "data-role": "message", role: "alert" });
  const stage = element("div", { class: "aex-stage", "data-role": "figure", role: "figure",
    "aria-label": "Attention explorer" });
  const readout = element("div", { class: "aex-readout", "data-role": "readout",
    "aria-live": "polite" });
  // the look's table and "Save as…" (figure_tools.js), read only when used
  const controls = figureControls({ title: () => figureTitle(explorer),
    table: () => figureTable(explorer), svg: () => figureSvg(explorer) });
  root.append(bar, chips, message, stage, readout, controls);
  host.append(root);

  // ------------------------------------------------------------ what is drawn

  const setupNamed = (name) => data.setups.find((s) => s.name === name) || data.setups[0];
  const a = () => data.setups[0];
  const b = () => data.setups[1] || null;
  const comparable = () => b() !== null && sameShape(a(), b());
  const signed = () => state.setup === "B-A";
  const shown = () => (signed() ? a() : setupNamed(state.setup)); // shapes and tokens

  function weightsOf(layer, head, reader) {
    if (!signed()) return reader(setupNamed(state.setup), layer, head);
    return difference(reader(a(), layer, head), reader(b(), layer, head));
  }
  const full = (layer, head) => weightsOf(layer, head, fullWeights);
  const tile = (layer, head) => weightsOf(layer, head, tileWeights);
  const moved = (layer, head) => weightsOf(layer, head, movedWeights);
  const rolled = (layer) => weightsOf(layer, 0, (setup) => rolloutWeights(setup, layer));
  /** The layer whose rollout is drawn for `layer` (the last where only that one was sent). */
  const rolledLayer = (layer) => (rolloutWeights(shown(), layer) || { layer }).layer;
  const large = () => data.largeText;
  const query = () => (state.pinned !== null ? state.pinned : state.hovered);
  /** Where the colours end: 1, or the largest |weight| drawn when stretched: by the host's
   * choice, always for B − A (whose differences are small) and for long inputs (past LINES_ALL
   * tokens a weight is about 1/n: unstretched, every cell would be dark). */
  const stretched = () => data.stretch || signed() || shown().n > LINES_ALL;
  const colourScale = (drawn) => (stretched() ? Math.max(...drawn.map(peak)) : 1);
  const headName = (layer, head) => _("layer {layer}, head {head}",
    { layer: shown().layerLabels[layer], head });
  /** The local window a reading of `layer` marks (0: none; B − A and the rollout mark none). */
  const windowOf = (layer, reading = "weights") => (signed() || reading === "rollout" ? 0
    : shown().windows[layer] || 0);
  const masked = (layer, q, k, reading = "weights") => windowOf(layer, reading) > 0
    && outsideWindow(shown(), layer, q, k);

  // the explorer as its modes see it; each mode draws on the stage
  const explorer = { state, stage, message, shown, full, tile, moved, rolled, rolledLayer, large,
    signed, query, colourScale, headName, hover, pin, say, choose, window: windowOf, masked,
    overlaid: () => overlaid(explorer), mode: () => mode(), a, b, comparable, render, settle,
    look, modeButtons, layerPick, setups, title, chips, get data() { return data; } };
  const modes = Object.fromEntries(Object.entries(MODES)
    .map(([name, make]) => [name, make(explorer)]));
  const mode = () => modes[state.mode];

  for (const [name, { label }] of Object.entries(modes)) {
    const button = element("button", { type: "button", "data-role": "mode", "data-mode": name },
      label());
    button.addEventListener("click", () => { state.mode = name; render(); settle(); });
    modeButtons.append(button);
  }

  function setAttributes() {
    root.dataset.layer = String(state.layer);
    root.dataset.head = String(state.head);
    root.dataset.query = query() === null ? "" : String(query());
    root.dataset.pinned = String(state.pinned !== null);
    root.dataset.setup = state.setup;
    root.dataset.mode = state.mode;
    root.dataset.large = String(large());
  }

  function say(text) {
    readout.textContent = text;
  }

  /** The bar's and the regions' words, and the direction, in the payload's language (none
   * given: the page's, shared.js's speakWith). */
  function speak() {
    speakWith(data.words, data.lang);
    root.setAttribute("dir", rightToLeft() ? "rtl" : "ltr");
    root.setAttribute("lang", spoken());
    root.setAttribute("aria-label", _("Attention explorer"));
    stage.setAttribute("aria-label", _("Attention explorer"));
    modeButtons.setAttribute("aria-label", _("View"));
    setups.setAttribute("aria-label", _("Setup"));
    layerPick.setAttribute("aria-label", _("Layer"));
    layerWord.textContent = _("Layer") + " ";
    chips.setAttribute("aria-label", _("Heads drawn"));
    for (const button of modeButtons.children) button.textContent = modes[button.dataset.mode].label();
    controls.relabel();
  }

  /** Name the stage by the look's sentence, and redraw an open table: when the look settles. */
  function nameFigure() {
    if (!data) return;
    stage.setAttribute("aria-label", figureSentence(explorer));
    controls.refresh();
  }

  function settle() {
    clearTimeout(settleTimer);
    settleTimer = setTimeout(() => {
      nameFigure();
      onSelect({ layer: state.layer, head: state.head, query: state.pinned, setup: state.setup,
        mode: state.mode, full: full(state.layer, state.head) !== null });
    }, SETTLE_MS);
  }

  function choose(layer, head) {
    const setup = shown();
    state.layer = Math.min(Math.max(layer, 0), setup.layers - 1);
    state.head = Math.min(Math.max(head, 0), setup.heads - 1);
    render();
    settle();
  }

  // ------------------------------------------------------------ looking

  function hover(q) {
    state.hovered = q;
    look();
  }

  function pin(q) {
    state.pinned = state.pinned === q ? null : q;
    look();
    settle();
  }

  /** Redraw what a look changes (cheap): the mode's drawing, attributes, readout. */
  function look() {
    setAttributes();
    mode().draw();
    const q = query();
    const cell = mode().pointed();
    if (cell && state.hovered !== null) {
      say(describe(explorer, state.layer, state.head, cell[0], cell[1]));
    } else if (q !== null) {
      const said = describe(explorer, state.layer, state.head, q, null);
      say(state.pinned !== null ? _("{readout} (pinned)", { readout: said }) : said);
    } else {
      say(_("{name}: point at a token, or use ↑/↓ and Enter", { name: shownName(explorer) }));
    }
  }

  function render() {
    message.textContent = "";
    if (!data) return;
    if (state.setup === "B-A" && !comparable()) state.setup = a().name;
    if (!data.setups.some((s) => s.name === state.setup) && state.setup !== "B-A") {
      state.setup = a().name;
    }
    if (!available(explorer, state.mode)) state.mode = "lines";
    root.classList.toggle("aex-large", large());
    const setup = shown();
    state.layer = Math.min(state.layer, setup.layers - 1);
    state.head = Math.min(state.head, setup.heads - 1);
    if (query() !== null && query() >= setup.n) { state.pinned = null; state.hovered = null; }
    if (b() && !comparable()) {
      message.textContent = _("B − A needs the same layers, heads and tokens in both setups.");
    }
    drawBar(explorer);
    if (mode().overlays || chips.firstChild) drawChips(explorer);
    for (const other of Object.values(modes)) if (other !== mode()) other.forget();
    if (state.mode === "rollout" && rolledLayer(state.layer) !== state.layer) {
      message.textContent = n_("Only the rollout after the last layer was sent for {count} "
        + "token: it is drawn whichever layer is chosen.", "Only the rollout after the last layer "
        + "was sent for {count} tokens: it is drawn whichever layer is chosen.", setup.n);
    } else if (mode().oneHead && !full(state.layer, state.head)) {
      message.textContent = _("{head} is drawn in blocks until its full resolution arrives.",
        { head: headName(state.layer, state.head) });
    }
    look();
  }

  root.addEventListener("keydown", (event) => onKey(explorer, event));

  // ------------------------------------------------------------ the host's handle

  function update(next) {
    try {
      data = decodePayload(next);
    } catch (error) {
      data = null;
      stage.replaceChildren();
      message.textContent = _("Nothing to draw: {error}", { error: error.message });
      return;
    }
    const at = data.start && JSON.stringify(data.start);
    if (at && at !== opened) openAt(data.start);
    opened = at || opened;
    speak();
    for (const each of Object.values(modes)) each.forget();
    render();
    nameFigure();
  }

  /** Everything said again in the language spoken now (the page's changed), the data as it
   * is: nothing decoded or computed again. */
  function relabel() {
    if (!data) return;
    speak();
    render();
    nameFigure();
  }

  update(payload);
  return {
    update,
    relabel,
    destroy() {
      clearTimeout(settleTimer);
      root.remove();
    },
    get selection() {
      return { layer: state.layer, head: state.head, query: state.pinned, setup: state.setup,
        mode: state.mode };
    },
  };
}
