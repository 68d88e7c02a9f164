/**
 * A figure module (token_lines.js, value_histogram.js, top_units.js, block_diagram.js,
 * head_fingerprint.js) in an offline HTML file, given the module's `mount` (encoder/web/hosts.py's
 * entry): mounts it on the element named by each of its data's script elements (JSON, never
 * run). encoder/web/offline.py writes the module's file name for MODULE.
 */

const MODULE = "MODULE_NAME";

export default function mountEvery(mount) {
  for (const data of document.querySelectorAll(`script[data-figure-for][data-module="${MODULE}"]`)) {
    mount(document.getElementById(data.dataset.figureFor), JSON.parse(data.textContent));
  }
}
