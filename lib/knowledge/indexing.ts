import { headingPath, type Chunk } from './chunker.js';
import { AUTO_LANGUAGE, documentLanguage } from './language.js';
import { localModel } from './local-model.js';
import type { ChunkIndexing } from './store.js';

/**
 * What a document's chunks are indexed with besides their text, decided in one place for the
 * ingestor and the bench: the document's language (detected in a base in `auto`, else the
 * base's own) and, for a base without an embedding server, the local sentence model's vectors
 * (lib/knowledge/local-model.ts; none while it is off or failed). The ingestor has them made
 * in its parse threads (`vectors`); the bench makes them here.
 */
export async function localIndexing(
  base: { language: string; hasEmbeddingServer: boolean },
  title: string,
  content: string,
  chunks: Chunk[],
  vectors?: (Float32Array | null)[] | null,
): Promise<Pick<ChunkIndexing, 'language' | 'localVectors'>> {
  const language = base.language === AUTO_LANGUAGE ? documentLanguage(title, content) : null;
  if (base.hasEmbeddingServer) return { language, localVectors: null };
  if (vectors !== undefined) return { language, localVectors: vectors };
  if (!(await localModel.load())) return { language, localVectors: null };
  return { language, localVectors: chunks.map((c) => localModel.embed(chunkEmbeddingText(title, c))) };
}

/** The text a chunk's vector is made of: its document's title, its headings, its text. */
export const chunkEmbeddingText = (title: string, c: Chunk) => [title, headingPath(c.headings), c.text].filter(Boolean).join('\n');
