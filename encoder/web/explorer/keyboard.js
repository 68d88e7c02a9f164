/**
 * The explorer's keys (explorer `x`, attention_explorer.js's mount): ←/→ heads, PageUp/PageDown
 * layers, ↑/↓ query tokens, Enter pins or unpins, Escape clears, N opens or closes the neuron
 * view, "[" and "]" step its key; a button's and the selects' own keys stay theirs.
 */
import { neuronCell, stepKey } from "../neuron_view.js";

export function onKey(x, event) {
  if (!x.data) return;
  const onButton = event.target.closest && event.target.closest("button");
  if (onButton && (event.key === "Enter" || event.key === " ")) return; // the button's own
  if (event.target.closest && event.target.closest("select")) return; // a select's own keys
  const setup = x.shown();
  const index = x.state.layer * setup.heads + x.state.head;
  const count = setup.layers * setup.heads;
  const q = x.query();
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    const next = (index + (event.key === "ArrowRight" ? 1 : count - 1)) % count;
    x.choose(Math.floor(next / setup.heads), next % setup.heads);
  } else if (event.key === "PageDown" || event.key === "PageUp") {
    const step = event.key === "PageDown" ? 1 : setup.layers - 1;
    x.choose((x.state.layer + step) % setup.layers, x.state.head);
  } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    const step = event.key === "ArrowDown" ? 1 : -1;
    const next = q === null ? (step > 0 ? 0 : setup.n - 1) : (q + step + setup.n) % setup.n;
    x.state.cell = null;
    if (x.state.pinned !== null) { x.state.pinned = next; x.settle(); } // a new pin settles
    x.hover(next);
  } else if (event.key === "n" || event.key === "N") {
    if (x.state.mode === "neuron") {
      x.state.mode = x.state.before;
      x.render();
      x.settle();
    } else if (x.canShow("neuron")) {
      const cell = x.state.cell;
      x.openNeuron(q ?? 0, cell && cell[0] === q ? cell[1] : null);
    }
  } else if ((event.key === "[" || event.key === "]") && x.state.mode === "neuron") {
    const cell = neuronCell(x);
    if (cell) stepKey(x, cell.key + (event.key === "]" ? 1 : -1));
  } else if (event.key === "Enter" && q !== null) {
    x.pin(q);
  } else if (event.key === "Escape") {
    x.state.pinned = null;
    x.state.hovered = null;
    x.look();
    x.settle();
  } else {
    return;
  }
  event.preventDefault();
}
