import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, MAX_SYNONYM_LENGTH, MAX_SYNONYMS_PER_GROUP } from '../../lib/knowledge/search.js';
import type { SearchHit } from '../../lib/knowledge/retrieve.js';
import type { KnowledgeBase, KnowledgeDocument } from '../../schema/entities.js';
import type { QueryParams } from '../http/route.js';
import { arrayOf, BIG_ID, BOOLEAN, COUNT, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP } from '../http/schemas.js';
import { bodyValidator, idPathParam, invalidFields, type BodyValidator } from '../http/validate.js';
import type { BaseInput } from '../knowledge/service.js';

/**
 * What the knowledge routes (gateway/routes/knowledge.ts) accept and answer: the body
 * validators and query parser they check requests with, the views of bases and documents
 * with the schemas the OpenAPI document shows for them, and the documented examples.
 */

/** A JSON document's content may be up to this many UTF-8 bytes. */
export const MAX_DOCUMENT_BYTES = 1_000_000;
/** An uploaded file may be up to this many bytes. */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
const MAX_QUERY_LENGTH = 1000;

const nameProperty = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' };
const embeddingProperty = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['baseUrl', 'name'],
  properties: {
    baseUrl: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2000 },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    apiKey: { type: ['string', 'null'], minLength: 1, maxLength: 4096 },
  },
};
const LANGUAGE_HINT =
  '`auto` (the default): each document is stemmed in the language it is detected in, a question searched in its own. ' +
  'Or a PostgreSQL text-search configuration of the database (english, russian, german, simple: no stemming, …) for every document.';
const languageProperty = { type: 'string', minLength: 1, maxLength: 63, pattern: '^[A-Za-z_][A-Za-z0-9_.]*$', description: LANGUAGE_HINT };
/** How many groups a base holds is its company's quota (QUOTA_SYNONYM_GROUPS_PER_BASE, 403 past it); a group's size and its terms' length are refused with 400. */
const synonymsProperty = {
  type: 'array',
  description: `The base's own synonym groups, beside the built-in ones: in each, ${MAX_SYNONYMS_PER_GROUP} words or short phrases at most (of up to ${MAX_SYNONYM_LENGTH} characters) a customer may use for the same thing. Replaces the groups before. At most QUOTA_SYNONYM_GROUPS_PER_BASE groups (2000 by default).`,
  items: { type: 'array', minItems: 2, maxItems: MAX_SYNONYMS_PER_GROUP, items: { type: 'string', minLength: 1, maxLength: MAX_SYNONYM_LENGTH, pattern: '\\S' } },
};

export const createBaseBody = bodyValidator<BaseInput & { name: string }>({
  title: 'KnowledgeBaseCreate',
  type: 'object', additionalProperties: false, required: ['name'], properties: { name: nameProperty, language: languageProperty, embedding: embeddingProperty, synonyms: synonymsProperty },
});
export const patchBaseBody = bodyValidator<BaseInput>({
  title: 'KnowledgeBasePatch',
  type: 'object', additionalProperties: false, properties: { name: nameProperty, language: languageProperty, embedding: embeddingProperty, synonyms: synonymsProperty },
});
type TextDocumentInput = { title: string; content: string; format?: 'text' | 'markdown' | 'html' };
type PageDocumentInput = { url: string; title?: string };
export const textDocumentBody = bodyValidator<TextDocumentInput>({
  title: 'TextDocument',
  type: 'object',
  additionalProperties: false,
  required: ['title', 'content'],
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' },
    content: { type: 'string', minLength: 1, maxLength: MAX_DOCUMENT_BYTES, pattern: '\\S', description: 'U+0000 and unpaired surrogates are removed (any other string holding one is refused).' },
    format: { type: 'string', enum: ['text', 'markdown', 'html'] },
  },
}, { cleaned: ['content'] });
export const urlDocumentBody = bodyValidator<PageDocumentInput>({
  title: 'PageDocument',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2000 },
    title: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' },
  },
});
/** A document is JSON text or a page by URL (or a multipart upload, which the route reads itself). */
export const DOCUMENT_BODIES: readonly BodyValidator<TextDocumentInput | PageDocumentInput>[] = [textDocumentBody, urlDocumentBody];

export const knowledgeBaseView = (kb: KnowledgeBase) => ({
  id: kb.id,
  name: kb.name,
  language: kb.language,
  embedding: kb.embeddingBaseUrl
    ? { baseUrl: kb.embeddingBaseUrl, name: kb.embeddingModel, hasApiKey: kb.embeddingApiKeySealed !== null, dimensions: kb.embeddingDimensions }
    : null,
  synonyms: kb.synonyms,
  chunks: kb.chunkCount,
  createdAt: kb.createdAt.toISOString(),
  updatedAt: kb.updatedAt.toISOString(),
});

export const documentView = (d: KnowledgeDocument) => ({
  id: d.id,
  title: d.title,
  source: d.source,
  status: d.status,
  progress: d.progress,
  error: d.error,
  chunks: d.chunkCount,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
});

/** `q` and `limit` of a search. */
export const SEARCH_QUERY: QueryParams<{ q: string; limit: number | undefined }> = {
  params: [
    { name: 'q', in: 'query', required: true, description: 'The question.', schema: { type: 'string', minLength: 1, maxLength: MAX_QUERY_LENGTH }, example: 'how do I descale the kettle' },
    { name: 'limit', in: 'query', description: `Results (1–${MAX_SEARCH_LIMIT}, default ${DEFAULT_SEARCH_LIMIT}).`, schema: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_LIMIT, default: DEFAULT_SEARCH_LIMIT } },
  ],
  parse: (q) => {
    const details = [];
    if (typeof q.q !== 'string' || !q.q.trim()) details.push({ field: 'q', message: 'is required' });
    else if (q.q.length > MAX_QUERY_LENGTH) details.push({ field: 'q', message: `must be at most ${MAX_QUERY_LENGTH} characters` });
    let limit: number | undefined;
    if (q.limit !== undefined) {
      limit = typeof q.limit === 'string' && /^\d{1,3}$/.test(q.limit) ? Number(q.limit) : NaN;
      if (!(limit >= 1 && limit <= MAX_SEARCH_LIMIT)) details.push({ field: 'limit', message: `must be an integer from 1 to ${MAX_SEARCH_LIMIT}` });
    }
    if (details.length) throw invalidFields(details);
    return { q: q.q as string, limit };
  },
};

export const KNOWLEDGE_BASE = object(
  {
    id: ID,
    name: STRING,
    language: { type: 'string', description: LANGUAGE_HINT },
    embedding: nullable(object({ baseUrl: STRING, name: STRING, hasApiKey: BOOLEAN, dimensions: nullable(COUNT) })),
    synonyms: { ...arrayOf(arrayOf(STRING)), description: "The base's own synonym groups (the built-in English and Russian ones always apply too)." },
    chunks: COUNT,
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  { title: 'KnowledgeBase' },
);
export const DOCUMENT_PROPERTIES = {
  id: ID,
  title: STRING,
  source: object(
    { type: { type: 'string', enum: ['text', 'markdown', 'html', 'pdf', 'url'] }, filename: STRING, url: STRING, bytes: { ...COUNT, description: 'Size of the original.' } },
    { title: 'DocumentSource', optional: ['filename', 'url', 'bytes'] },
  ),
  status: { type: 'string', enum: ['processing', 'ready', 'failed'] },
  progress: { type: 'integer', minimum: 0, maximum: 100 },
  error: { ...nullable(STRING), description: 'Why it failed.' },
  chunks: COUNT,
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
};
export const DOCUMENT = object(DOCUMENT_PROPERTIES, { title: 'Document' });
export const CHUNK = object({ id: BIG_ID, position: COUNT, heading: STRING, content: STRING, words: COUNT, embedded: BOOLEAN }, { title: 'Chunk' });
export const SEARCH_RESULT = object(
  {
    documentId: ID,
    chunkId: BIG_ID,
    title: STRING,
    heading: STRING,
    snippet: STRING,
    score: { type: 'number', description: 'Reciprocal-rank score: higher is better, comparable within one search only.' },
    relevance: { type: 'number', minimum: 0, maximum: 1, description: "The share of the question's words known to the base that the chunk holds." },
    confidence: { type: 'number', minimum: 0, maximum: 1, description: "How well the chunk answers the question (the question's meaningful words it covers, weighted by rarity and where they match; words the base never uses count against it): what an agent's relevanceThreshold is compared with." },
    matchedBy: arrayOf({ type: 'string', enum: ['fulltext', 'trigram', 'vector'] }),
  },
  { title: 'SearchResult' },
);
export const searchResultView = (r: SearchHit) => ({ documentId: r.documentId, chunkId: r.chunkId, title: r.title, heading: r.heading, snippet: r.snippet, score: r.score, relevance: r.relevance, confidence: r.confidence, matchedBy: r.matchedBy });
export const EXAMPLE_BASE = { id: 1, name: 'Help centre', language: 'english', embedding: null, synonyms: [['esim', 'embedded sim', 'digital sim']], chunks: 12, createdAt: EXAMPLE_TIME, updatedAt: EXAMPLE_TIME };
export const EXAMPLE_DOCUMENT = { id: 7, title: 'Kettle manual', source: { type: 'pdf', filename: 'manual.pdf', bytes: 48213 }, status: 'ready', progress: 100, error: null, chunks: 12, createdAt: EXAMPLE_TIME, updatedAt: EXAMPLE_TIME };
export const EXAMPLE_CHUNK = { id: 31, position: 0, heading: 'Kettle manual › Descaling', content: 'Descale the kettle once a month with citric acid.', words: 9, embedded: false };
export const ONE_BASE = { schema: object({ knowledgeBase: KNOWLEDGE_BASE }), example: { knowledgeBase: EXAMPLE_BASE } };
export const BASE_ID = idPathParam('knowledge base');
export const DOCUMENT_ID = idPathParam('document', 'docId');
export const NO_BASE = 'no such knowledge base';
export const NO_DOCUMENT = 'no such knowledge base or document';
export const BAD_BASE = `a bad field (a synonym group of more than ${MAX_SYNONYMS_PER_GROUP} terms, a term over ${MAX_SYNONYM_LENGTH} characters), a language neither auto nor a text-search configuration of the database, an embedding baseUrl at a private address, or a new embedding baseUrl without its apiKey`;
export const TOO_MANY_SYNONYMS = 'more synonym groups than QUOTA_SYNONYM_GROUPS_PER_BASE (2000 by default; `details: [{field: "synonyms", message: "limit N"}]`)';

