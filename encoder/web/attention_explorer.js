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
 * asks: true where the host sends the heads' q and k when the neuron view opens (its mode is
 * offered before the payload holds them; the page's glue): it says they are on their way.
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
 *             "rollout", "neuron": neuron_view.js, its own contract), data-large ("true"|"false"); focusable: ←/→ heads, PageUp/PageDown
 *             layers, ↑/↓ query tokens, Enter pins/unpins, Escape clears, N opens (and
 *             closes) the neuron view of the query, "[" and "]" its key token
 *   layer     [data-testid="explorer-layer"] (data-role="layer"): a select element of the layers
 *   window    [data-role="window"] in lines: which tokens are shown ("Tokens 120–147 of 502 …"),
 *             data-start and data-end (end exclusive); absent while every token is shown
 *   buttons   [data-role="mode"][data-mode=...], [data-role="setup"][data-setup=...]
 *   chips     [data-role="chip"][data-layer][data-head][aria-pressed]: heads overlaid in lines
 *   tokens    [data-side="query"|"key"][data-index] (lines and matrix labels), user text as text
 *   weights   [data-role="weight"] inside a key token: the selected head's weight for the query
 *   cells     the matrix canvas [data-role="matrix"] (hover a cell: readout; click: the neuron
 *             view of that query and key), data-reading
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
import { linesMode } from "./explorer/lines.js";
import { matrixMode } from "./explorer/matrix.js";
import { headsMode } from "./explorer/heads.js";
import { addModeButtons, available, overlaid } from "./explorer/bar.js";
import { readers, startState } from "./explorer/state.js";
import { neuronMode, openNeuron } from "./neuron_view.js";
import {
  buildElements, choose, hover, look, pin, receive, relabel, render, settle,
} from "./explorer/view.js";

const MODES = { // in the bar's order
  lines: linesMode,
  matrix: (explorer) => matrixMode(explorer, "weights"),
  heads: headsMode,
  moves: (explorer) => matrixMode(explorer, "moves"),
  rollout: (explorer) => matrixMode(explorer, "rollout"),
  neuron: neuronMode, // neuron_view.js: one cell's q · k, dimension by dimension
};

// ---------------------------------------------------------------------------- the explorer

/** Draw `payload` into `host` (an element or shadow root); see the module doc. */
export function mount(host, payload, options = {}) {
  const modeNames = Object.keys(MODES);
  // the explorer as its parts see it (explorer/*.js): its state, its data, its elements, its
  // readers and what redraws it
  const x = { state: startState(options.selection || {}, modeNames), data: null,
    settleTimer: null, onSelect: options.onSelect || (() => {}), opened: null,
    asks: Boolean(options.asks) };
  Object.assign(x, buildElements(x, host), readers(x), {
    say: (text) => { x.readout.textContent = text; },
    choose: (layer, head) => choose(x, layer, head),
    hover: (q) => hover(x, q),
    pin: (q) => pin(x, q),
    look: () => look(x),
    render: () => render(x),
    settle: () => settle(x),
    overlaid: () => overlaid(x),
    mode: () => x.modes[x.state.mode],
    openNeuron: (q, k) => openNeuron(x, q, k),
    canShow: (name) => available(x, name),
  });
  x.modes = Object.fromEntries(Object.entries(MODES).map(([name, make]) => [name, make(x)]));
  addModeButtons(x);
  const update = (next) => receive(x, next, modeNames);
  update(payload);
  const { state } = x;
  return {
    update,
    relabel: () => relabel(x),
    destroy() {
      clearTimeout(x.settleTimer);
      x.root.remove();
    },
    get selection() {
      return { layer: state.layer, head: state.head, query: state.pinned, setup: state.setup,
        mode: state.mode };
    },
  };
}
