import { query, type SqlClient } from '../db.js';
import { AUTO_LANGUAGE } from './language.js';
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, quotedLexeme } from './lexical-statement.js';

export interface ChunkText {
  chunkId: number;
  documentId: number;
  title: string;
  heading: string;
  content: string;
  snippet: string;
}

const HEADLINE_OPTIONS = 'StartSel="", StopSel="", MaxWords=35, MinWords=15, ShortWord=3, MaxFragments=2, FragmentDelimiter=" … "';

/** The text of chunks (one company's), with a snippet around `terms` (the base's own lexemes, read in each chunk's language). */
export async function chunkTexts(client: SqlClient, companyId: number, chunkIds: number[], terms: string[]): Promise<Map<number, ChunkText>> {
  if (!chunkIds.length) return new Map();
  const rows = await query<{ id: string; document_id: number; title: string; heading: string; content: string; snippet: string }>(
    client,
    'kb_chunk_texts',
    `with tq as (select coalesce((select string_agg(${quotedLexeme('t')}, ' | ') from unnest($3::text[]) t), '')::tsquery as q)
     select c.id, c.document_id, d.title, c.heading, c.content,
            case when numnode(tq.q) > 0 then ts_headline(coalesce(c.language, nullif(kb.language, '${AUTO_LANGUAGE}'), 'simple')::regconfig, c.content, tq.q, '${HEADLINE_OPTIONS}')
                 else left(c.content, 240) end as snippet
     from knowledge_chunks c
     join knowledge_documents d on d.id = c.document_id and d.company_id = c.company_id
     join knowledge_bases kb on kb.id = c.knowledge_base_id and kb.company_id = c.company_id, tq
     where c.id = any($2::bigint[]) and c.company_id = $1`,
    [companyId, chunkIds, terms],
  );
  return new Map(rows.map((r) => [Number(r.id), { chunkId: Number(r.id), documentId: r.document_id, title: r.title, heading: r.heading, content: r.content, snippet: cleanSnippet(r.snippet) }]));
}

/** ts_headline keeps the text's whitespace; a snippet reads better on one line. */
export function cleanSnippet(snippet: string): string {
  return snippet.replace(/\s+/g, ' ').trim();
}

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_SEARCH_LIMIT;
  return Math.min(MAX_SEARCH_LIMIT, Math.max(1, Math.floor(limit)));
}
