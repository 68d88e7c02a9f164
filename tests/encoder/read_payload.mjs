// What the explorer reads of a payload, as JSON on stdout, for tests/encoder/test_web_modules.py:
//   node read_payload.mjs EXPLORER_MODULE.mjs PAYLOAD_FILE
// The payload is read twice: from its own bytes, and from a DataView at an odd byte offset (as
// a host may hand it over), each setup's heads through the explorer's own readers.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [modulePath, payloadPath] = process.argv.slice(2);
const { decodePayload, fullWeights, tileWeights, movedWeights, rolloutWeights } = await import(
  pathToFileURL(modulePath).href);

const matrix = (weights) => Array.from({ length: weights.n },
  (_, q) => Array.from({ length: weights.n }, (_, k) => weights.at(q, k)));

function read(data) {
  const { setups, stretch, start, largeText } = decodePayload(data);
  return {
    stretch,
    start,
    largeText,
    setups: setups.map((setup) => ({
      name: setup.name, tokens: setup.tokens, layers: setup.layers, heads: setup.heads,
      n: setup.n, layerLabels: setup.layerLabels,
      full: [...setup.full.keys()].map((key) => {
        const [layer, head] = key.split(",").map(Number);
        const moved = movedWeights(setup, layer, head);
        return { layer, head, weights: matrix(fullWeights(setup, layer, head)),
          moved: moved && matrix(moved) };
      }),
      rollout: Array.from({ length: setup.layers }, (_, layer) => {
        const rolled = rolloutWeights(setup, layer);
        return rolled && { layer: rolled.layer, weights: matrix(rolled) };
      }),
      tiles: setup.tiles && {
        starts: setup.tiles.starts,
        weights: Array.from({ length: setup.layers }, (_, layer) => Array.from(
          { length: setup.heads }, (_, head) => matrix(tileWeights(setup, layer, head)))),
      },
    })),
  };
}

const bytes = new Uint8Array(readFileSync(payloadPath));
const shifted = new Uint8Array(bytes.length + 1);
shifted.set(bytes, 1);
console.log(JSON.stringify({
  aligned: read(bytes),
  odd: read(new DataView(shifted.buffer, 1, bytes.length)),
}));
