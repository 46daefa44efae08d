import { query, type SqlClient } from '../db.js';

/**
 * Vector search without pgvector (not packaged for this PostgreSQL): a base's chunk
 * vectors (unit vectors: the embedding server's, `embedding real[]`, or the local sentence
 * model's, `local_vector` float32 bytes) are loaded once into one Float32Array per base and
 * source, and ranked by dot product (= cosine) in code. The copy is kept while the base's
 * `content_version` is unchanged (every change of its chunks bumps it), least recently
 * used bases are dropped past `maxBytes`. 10k chunks of 256 dimensions: 10 MB, ~2 ms a query.
 */
export const DEFAULT_VECTOR_CACHE_BYTES = 256 * 1024 * 1024;

/** Which vectors: the base's embedding server's, or the local model's (lib/knowledge/local-model.ts). */
export type VectorSource = 'server' | 'local';

interface BaseVectors {
  version: string;
  dims: number;
  /** Row of each chunk id. */
  rows: Map<number, number>;
  chunkIds: Float64Array;
  documentIds: Int32Array;
  matrix: Float32Array;
  bytes: number;
}

export interface VectorHit {
  chunkId: number;
  documentId: number;
  similarity: number;
}

export interface BaseRef {
  companyId: number;
  knowledgeBaseId: number;
  contentVersion: string;
}

/** A base's chunk vectors from one source, by chunk id. */
async function readVectors(client: SqlClient, companyId: number, knowledgeBaseId: number, source: VectorSource): Promise<{ chunkId: number; documentId: number; v: ArrayLike<number> }[]> {
  if (source === 'server') {
    const rows = await query<{ id: string; document_id: number; embedding: number[] }>(
      client,
      'kb_vectors',
      `select id, document_id, embedding from knowledge_chunks where knowledge_base_id = $1 and company_id = $2 and embedding is not null order by id`,
      [knowledgeBaseId, companyId],
    );
    return rows.map((r) => ({ chunkId: Number(r.id), documentId: r.document_id, v: r.embedding }));
  }
  const rows = await query<{ id: string; document_id: number; local_vector: Buffer }>(
    client,
    'kb_local_vectors',
    `select id, document_id, local_vector from knowledge_chunks where knowledge_base_id = $1 and company_id = $2 and local_vector is not null order by id`,
    [knowledgeBaseId, companyId],
  );
  return rows.map((r) => {
    // A copy: the driver's buffer may be a view into a shared pool, not aligned for floats.
    const bytes = Uint8Array.from(r.local_vector);
    return { chunkId: Number(r.id), documentId: r.document_id, v: new Float32Array(bytes.buffer, 0, bytes.byteLength >> 2) };
  });
}

export class VectorIndex {
  /** By `${knowledgeBaseId}:${source}`. */
  readonly #bases = new Map<string, BaseVectors>();
  readonly #loading = new Map<string, Promise<BaseVectors>>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(options: { maxBytes?: number } = {}) {
    this.#maxBytes = options.maxBytes ?? DEFAULT_VECTOR_CACHE_BYTES;
  }

  async #load(client: SqlClient, companyId: number, knowledgeBaseId: number, version: string, source: VectorSource): Promise<BaseVectors> {
    const id = `${knowledgeBaseId}:${source}`;
    const hit = this.#bases.get(id);
    if (hit && hit.version === version) {
      this.#bases.delete(id);
      this.#bases.set(id, hit);
      return hit;
    }
    const key = `${id}:${version}`;
    let pending = this.#loading.get(key);
    if (!pending) {
      pending = (async () => {
        const vectors = await readVectors(client, companyId, knowledgeBaseId, source);
        const dims = vectors[0]?.v.length ?? 0;
        const usable = vectors.filter((r) => r.v.length === dims);
        const base: BaseVectors = {
          version, dims,
          rows: new Map(usable.map((r, i) => [r.chunkId, i])),
          chunkIds: new Float64Array(usable.map((r) => r.chunkId)),
          documentIds: new Int32Array(usable.map((r) => r.documentId)),
          matrix: new Float32Array(usable.length * dims),
          bytes: usable.length * (dims * 4 + 40),
        };
        usable.forEach((r, i) => base.matrix.set(r.v, i * dims));
        const old = this.#bases.get(id);
        if (old) this.#bytes -= old.bytes;
        this.#bases.delete(id);
        this.#bases.set(id, base);
        this.#bytes += base.bytes;
        for (const [other, b] of this.#bases) {
          if (this.#bytes <= this.#maxBytes || other === id) break;
          this.#bases.delete(other);
          this.#bytes -= b.bytes;
        }
        return base;
      })().finally(() => this.#loading.delete(key));
      this.#loading.set(key, pending);
    }
    return pending;
  }

  /** The cosine of `v` with each of `chunkIds` (null: the chunk has no vector). */
  async similarities(client: SqlClient, base: BaseRef, v: ArrayLike<number>, chunkIds: number[], source: VectorSource = 'server'): Promise<(number | null)[]> {
    const b = await this.#load(client, base.companyId, base.knowledgeBaseId, base.contentVersion, source);
    return chunkIds.map((id) => {
      const row = b.rows.get(id);
      if (row === undefined || b.dims !== v.length) return null;
      let s = 0;
      const off = row * b.dims;
      for (let j = 0; j < b.dims; j++) s += b.matrix[off + j]! * v[j]!;
      return Math.round(s * 1e6) / 1e6;
    });
  }

  /** The `k` chunks most similar to the unit vector `v`, best first. */
  async nearest(client: SqlClient, base: BaseRef, v: ArrayLike<number>, k: number, source: VectorSource = 'server'): Promise<VectorHit[]> {
    const b = await this.#load(client, base.companyId, base.knowledgeBaseId, base.contentVersion, source);
    if (b.dims !== v.length || b.dims === 0) return [];
    const n = b.chunkIds.length;
    const q = v instanceof Float32Array ? v : Float32Array.from(v);
    const top: { i: number; s: number }[] = [];
    for (let i = 0; i < n; i++) {
      let s = 0;
      const off = i * b.dims;
      for (let j = 0; j < b.dims; j++) s += b.matrix[off + j]! * q[j]!;
      if (top.length < k) {
        top.push({ i, s });
        if (top.length === k) top.sort((x, y) => y.s - x.s);
      } else if (s > top[k - 1]!.s) {
        let at = k - 1;
        while (at > 0 && top[at - 1]!.s < s) at--;
        top.splice(at, 0, { i, s });
        top.pop();
      }
    }
    if (top.length < k) top.sort((x, y) => y.s - x.s);
    return top.map((t) => ({ chunkId: b.chunkIds[t.i]!, documentId: b.documentIds[t.i]!, similarity: Math.round(t.s * 1e6) / 1e6 }));
  }
}
