import { query, type SqlClient } from '../db.js';

/**
 * Vector search without pgvector (not packaged for this PostgreSQL): a base's chunk
 * embeddings (unit vectors, `real[]`) are loaded once into one Float32Array per base and
 * ranked by dot product (= cosine) in code. The copy is kept while the base's
 * `content_version` is unchanged (every change of its chunks bumps it), least recently
 * used bases are dropped past `maxBytes`. 10k chunks of 256 dimensions: 10 MB, ~2 ms a query.
 */
export const DEFAULT_VECTOR_CACHE_BYTES = 256 * 1024 * 1024;

interface BaseVectors {
  version: string;
  dims: number;
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

export class VectorIndex {
  readonly #bases = new Map<number, BaseVectors>();
  readonly #loading = new Map<string, Promise<BaseVectors>>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(options: { maxBytes?: number } = {}) {
    this.#maxBytes = options.maxBytes ?? DEFAULT_VECTOR_CACHE_BYTES;
  }

  async #load(client: SqlClient, companyId: number, knowledgeBaseId: number, version: string): Promise<BaseVectors> {
    const hit = this.#bases.get(knowledgeBaseId);
    if (hit && hit.version === version) {
      this.#bases.delete(knowledgeBaseId);
      this.#bases.set(knowledgeBaseId, hit);
      return hit;
    }
    const key = `${knowledgeBaseId}:${version}`;
    let pending = this.#loading.get(key);
    if (!pending) {
      pending = (async () => {
        const rows = await query<{ id: string; document_id: number; embedding: number[] }>(
          client,
          'kb_vectors',
          `select id, document_id, embedding from knowledge_chunks where knowledge_base_id = $1 and company_id = $2 and embedding is not null order by id`,
          [knowledgeBaseId, companyId],
        );
        const dims = rows[0]?.embedding.length ?? 0;
        const usable = rows.filter((r) => r.embedding.length === dims);
        const base: BaseVectors = {
          version, dims,
          chunkIds: new Float64Array(usable.map((r) => Number(r.id))),
          documentIds: new Int32Array(usable.map((r) => r.document_id)),
          matrix: new Float32Array(usable.length * dims),
          bytes: usable.length * (dims * 4 + 12),
        };
        usable.forEach((r, i) => base.matrix.set(r.embedding, i * dims));
        const old = this.#bases.get(knowledgeBaseId);
        if (old) this.#bytes -= old.bytes;
        this.#bases.delete(knowledgeBaseId);
        this.#bases.set(knowledgeBaseId, base);
        this.#bytes += base.bytes;
        for (const [id, b] of this.#bases) {
          if (this.#bytes <= this.#maxBytes || id === knowledgeBaseId) break;
          this.#bases.delete(id);
          this.#bytes -= b.bytes;
        }
        return base;
      })().finally(() => this.#loading.delete(key));
      this.#loading.set(key, pending);
    }
    return pending;
  }

  /** The `k` chunks most similar to the unit vector `v`, best first. */
  async nearest(client: SqlClient, base: { companyId: number; knowledgeBaseId: number; contentVersion: string }, v: number[], k: number): Promise<VectorHit[]> {
    const b = await this.#load(client, base.companyId, base.knowledgeBaseId, base.contentVersion);
    if (b.dims !== v.length || b.dims === 0) return [];
    const n = b.chunkIds.length;
    const q = Float32Array.from(v);
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
