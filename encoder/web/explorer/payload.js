/**
 * The explorer's payload as the browser reads it (encoder/web/payload.py writes it): the header,
 * each setup's heads in full or in blocks, what each head moves and the rollout.
 */


const SCALE = 65535;
const MAGIC = "AEX1";

// ---------------------------------------------------------------------------- the payload

function asBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new Error("the explorer's payload is not bytes");
}

/** The payload's header and weights: {setups: [{name, tokens, layers, heads, n, layerLabels,
 * full: Map("l,h" -> Uint16Array n*n), tiles: {starts, size, data: Uint16Array} | null}]}. */
export function decodePayload(data) {
  const bytes = asBytes(data);
  if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(0, 4)) !== MAGIC) {
    throw new Error("the explorer's payload does not start with AEX1");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const bodyStart = 8 + length;
  const array = (Type, offset, count) => { // a view of the body, copied where misaligned
    const start = bytes.byteOffset + bodyStart + offset;
    if (start % Type.BYTES_PER_ELEMENT === 0) return new Type(bytes.buffer, start, count);
    const end = bodyStart + offset + Type.BYTES_PER_ELEMENT * count;
    return new Type(bytes.slice(bodyStart + offset, end).buffer);
  };
  const words = (offset, count) => array(Uint16Array, offset, count);
  const setups = header.setups.map((s) => {
    const cells = s.n * s.n;
    const full = new Map();
    s.full.forEach(([layer, head], i) => {
      full.set(`${layer},${head}`, words(s.full_offset + 2 * i * cells, cells));
    });
    let tiles = null;
    if (s.tiles) {
      const size = s.tiles.starts.length;
      tiles = { starts: s.tiles.starts, size,
        data: words(s.tiles.offset, s.layers * s.heads * size * size) };
    }
    const norms = new Map(); // "l,h" -> Float32Array n: the full heads' value norms
    if (s.norms) {
      s.full.forEach(([layer, head], i) => {
        norms.set(`${layer},${head}`, array(Float32Array, s.norms.offset + 4 * i * s.n, s.n));
      });
    }
    const rollout = new Map(); // layer -> Uint16Array n*n
    if (s.rollout) {
      s.rollout.layers.forEach((layer, i) => {
        rollout.set(layer, words(s.rollout.offset + 2 * i * cells, cells));
      });
    }
    const qk = new Map(); // "l,h" -> Uint16Array [2, n, dk] of float16 bits: q then k
    if (s.qk) {
      const size = 2 * s.n * s.qk.dk;
      s.qk.heads.forEach(([layer, head], i) => {
        qk.set(`${layer},${head}`, words(s.qk.offset + 2 * i * size, size));
      });
    }
    return { name: s.name, tokens: s.tokens.map(String), layers: s.layers, heads: s.heads,
      n: s.n, layerLabels: s.layer_labels, full, tiles, norms, rollout, qk,
      headDim: s.qk ? s.qk.dk : 0,
      windows: s.windows || new Array(s.layers).fill(0) };
  });
  if (!setups.length) throw new Error("the explorer's payload holds no setup");
  return { setups, stretch: Boolean(header.stretch), start: header.start || null,
    largeText: Boolean(header.large_text), lang: header.lang, words: header.words,
    direction: header.direction };
}

/** One head's [n*n] weights as numbers (full resolution), or null when only blocks exist. */
export function fullWeights(setup, layer, head) {
  const words = setup.full.get(`${layer},${head}`);
  return words ? { n: setup.n, at: (q, k) => words[q * setup.n + k] / SCALE } : null;
}

/** One head's norm-weighted attention ‖weight × f(key)‖ = weight × ‖f(key)‖ (as
 * encoder.inspect.moves), or null where the head is not in full or no norms were sent. */
export function movedWeights(setup, layer, head) {
  const weights = fullWeights(setup, layer, head);
  const norms = setup.norms.get(`${layer},${head}`);
  return weights && norms ? { n: setup.n, at: (q, k) => weights.at(q, k) * norms[k] } : null;
}

/** The rollout after `layer` ({n, at, layer}), or after the last layer sent when that one was
 * not (long inputs send only the last); null where none was sent. */
export function rolloutWeights(setup, layer) {
  if (!setup.rollout.size) return null;
  const kept = setup.rollout.has(layer) ? layer : Math.max(...setup.rollout.keys());
  const words = setup.rollout.get(kept);
  return { n: setup.n, layer: kept, at: (q, k) => words[q * setup.n + k] / SCALE };
}

/** One head's block tile: {n: blocks, at(q, k)} (the tile of full weights when there are no
 * blocks). */
export function tileWeights(setup, layer, head) {
  if (!setup.tiles) return fullWeights(setup, layer, head);
  const { size, data } = setup.tiles;
  const base = (layer * setup.heads + head) * size * size;
  return { n: size, at: (q, k) => data[base + q * size + k] / SCALE };
}

/** Whether layer `layer`'s local window masks query `q`'s key `k` (|q − k| > window / 2, as
 * encoder.core's attention_window); never in a global layer (window 0). */
export function outsideWindow(setup, layer, q, k) {
  const width = setup.windows[layer] || 0;
  return width > 0 && Math.abs(q - k) > Math.floor(width / 2);
}

export function sameShape(a, b) {
  return a.layers === b.layers && a.heads === b.heads && a.n === b.n
    && a.tokens.every((t, i) => t === b.tokens[i]);
}

/** B − A as a weights reader, or null where either is missing. */
export function difference(a, b) {
  if (!a || !b || a.n !== b.n) return null;
  return { n: a.n, at: (q, k) => b.at(q, k) - a.at(q, k) };
}


/** A float16's bits as a number. */
function half(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

const QK_READ = new WeakMap(); // a head's bits -> its {q, k} arrays, decoded once
/** One head's query and key vectors as its scores use them (RoPE's turned ones): {dk, q(i),
 * k(j)} each a Float64Array of dk numbers, or null where the payload holds none for the head. */
export function qkVectors(setup, layer, head) {
  const bits = setup.qk.get(`${layer},${head}`);
  if (!bits) return null;
  let read = QK_READ.get(bits);
  if (!read) {
    const values = Float64Array.from(bits, half);
    const dk = setup.headDim;
    const row = (side, i) => values.subarray((side * setup.n + i) * dk, (side * setup.n + i + 1) * dk);
    read = { dk, q: (i) => row(0, i), k: (j) => row(1, j) };
    QK_READ.set(bits, read);
  }
  return read;
}
