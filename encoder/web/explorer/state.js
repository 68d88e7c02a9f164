/**
 * What the explorer draws (explorer `x`, attention_explorer.js's mount): where it opens, and its
 * readers of the payload's setups as its state chooses (setup A, B or B − A, the chosen head,
 * the query), each reading `x.state` and `x.data` when it is called.
 */
import { _ } from "../shared.js";
import { LINES_ALL, peak } from "./draw.js";
import {
  difference, fullWeights, movedWeights, outsideWindow, rolloutWeights, sameShape, tileWeights,
} from "./payload.js";

/** A new state, at `start` ({setup, ...openAt's}); `modes`: the modes' names. */
export function startState(start, modes) {
  const state = {
    layer: 0, head: 0, mode: "lines", setup: start.setup || "A",
    hovered: null, // query token under the pointer or the keyboard's focus
    pinned: null,
    cell: null, // [query, key] under the pointer in the matrix
    overlay: [], // extra heads drawn in the lines view: [layer, head] pairs
    key: null, // the neuron view's key token (null: the query's largest weight)
    before: "matrix", // the mode the neuron view returns to
  };
  openAt(state, start, modes);
  return state;
}

/** Open at `at` ({layer, head, mode, query}, all optional; a mode not in `modes`: lines). */
export function openAt(state, at, modes) {
  state.layer = Number(at.layer) || 0;
  state.head = Number(at.head) || 0;
  state.mode = modes.includes(at.mode) ? at.mode : "lines";
  state.pinned = Number.isInteger(at.query) && at.query >= 0 ? at.query : null;
  state.key = Number.isInteger(at.key) && at.key >= 0 ? at.key : null;
  state.hovered = null;
  state.overlay = [];
}

/** The readers the modes, the bar and the readout share. */
export function readers(x) {
  const { state } = x;
  const setupNamed = (name) => x.data.setups.find((s) => s.name === name) || x.data.setups[0];
  const a = () => x.data.setups[0];
  const b = () => x.data.setups[1] || null;
  const comparable = () => b() !== null && sameShape(a(), b());
  const signed = () => state.setup === "B-A";
  const shown = () => (signed() ? a() : setupNamed(state.setup)); // shapes and tokens

  function weightsOf(layer, head, reader) {
    if (!signed()) return reader(setupNamed(state.setup), layer, head);
    return difference(reader(a(), layer, head), reader(b(), layer, head));
  }
  /** Where the colours end: 1, or the largest |weight| drawn when stretched: by the host's
   * choice, always for B − A (whose differences are small) and for long inputs (past LINES_ALL
   * tokens a weight is about 1/n: unstretched, every cell would be dark). */
  const stretched = () => x.data.stretch || signed() || shown().n > LINES_ALL;
  /** The local window a reading of `layer` marks (0: none; B − A and the rollout mark none). */
  const windowOf = (layer, reading = "weights") => (signed() || reading === "rollout" ? 0
    : shown().windows[layer] || 0);
  return {
    a, b, comparable, signed, shown,
    full: (layer, head) => weightsOf(layer, head, fullWeights),
    tile: (layer, head) => weightsOf(layer, head, tileWeights),
    moved: (layer, head) => weightsOf(layer, head, movedWeights),
    rolled: (layer) => weightsOf(layer, 0, (setup) => rolloutWeights(setup, layer)),
    /** The layer whose rollout is drawn for `layer` (the last where only that one was sent). */
    rolledLayer: (layer) => (rolloutWeights(shown(), layer) || { layer }).layer,
    large: () => x.data.largeText,
    query: () => (state.pinned !== null ? state.pinned : state.hovered),
    colourScale: (drawn) => (stretched() ? Math.max(...drawn.map(peak)) : 1),
    headName: (layer, head) => _("layer {layer}, head {head}",
      { layer: shown().layerLabels[layer], head }),
    window: windowOf,
    masked: (layer, q, k, reading = "weights") => windowOf(layer, reading) > 0
      && outsideWindow(shown(), layer, q, k),
  };
}
