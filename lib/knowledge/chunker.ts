import { storable } from '../text.js';

/**
 * A document's text as the rest of the knowledge code sees it, and its chunks.
 *
 * Every format (plain text, markdown, HTML, PDF, a fetched page) is turned into one
 * structured text: markdown-style headings (`#` … `######` at a line start) and paragraphs
 * separated by blank lines (gateway/knowledge/extract.ts). That text is what a document's
 * `content` holds, so a document can be chunked again later (a new language or embedding
 * model) without its original file. Plain-text documents (`format: "text"`) keep their text
 * as sent and have no headings.
 *
 * Chunks follow the structure: a chunk never spans two sections; a section's paragraphs are
 * packed into chunks of about TARGET_WORDS (a paragraph longer than MAX_WORDS is split at
 * sentence ends), and a section that needs several chunks repeats the last OVERLAP_WORDS of
 * one chunk at the start of the next, so a passage cut at a chunk border is still found
 * whole. Each chunk keeps its heading path (the headings above it, outermost first).
 */
export const TARGET_WORDS = 200;
export const MAX_WORDS = 300;
export const OVERLAP_WORDS = 40;

export type Block = { kind: 'heading'; level: number; text: string } | { kind: 'paragraph'; text: string };

export interface Chunk {
  /** 0, 1, 2, … within the document. */
  position: number;
  /** The headings above the chunk, outermost first (empty for text before any heading). */
  headings: string[];
  text: string;
  words: number;
}

const isBlank = (c: string): boolean => c === ' ' || c === '\t';
const isLineEnd = (c: string): boolean => c === '\n' || c === '\r' || c === '\u2028' || c === '\u2029';

/**
 * A markdown heading line (`## Title ##`): its level and text, or null. By hand, as the
 * pattern `^(#{1,6})[ \t]+(.+?)[ \t#]*$` would read it, in one pass: that pattern's lazy
 * text against its trailing class backtracks over a long run of blanks once per character.
 */
export function headingOf(line: string): { level: number; text: string } | null {
  let level = 0;
  while (level < line.length && line[level] === '#') level++;
  if (level < 1 || level > 6 || !isBlank(line[level] ?? '')) return null;
  let start = level;
  while (start < line.length && isBlank(line[start]!)) start++;
  for (let i = level; i < line.length; i++) if (isLineEnd(line[i]!)) return null;
  // Blanks only: the text is one of them (the pattern gives back one), provided there were two.
  if (start === line.length) return start - level >= 2 ? { level, text: '' } : null;
  let end = line.length;
  while (end > start + 1 && (isBlank(line[end - 1]!) || line[end - 1] === '#')) end--;
  return { level, text: line.slice(start, end).trim() };
}

const countWords = (text: string): number => (text.match(/\S+/g) ?? []).length;

/** Line breaks made uniform, NUL and other control characters (but tabs and newlines) removed. */
export function normaliseText(text: string): string {
  return storable(text)
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0001-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    // Only from a run's first blank: from each of its blanks the run would be read again to its end.
    .replace(/(?<![ \t\u00a0])[ \t\u00a0]+$/gm, '');
}

/** Blocks of a structured text (markdown headings when `headings`, else none). */
export function parseBlocks(text: string, options: { headings: boolean }): Block[] {
  const out: Block[] = [];
  let para: string[] = [];
  const flush = () => {
    const t = para.join('\n').trim();
    if (t) out.push({ kind: 'paragraph', text: t });
    para = [];
  };
  for (const line of normaliseText(text).split('\n')) {
    const h = options.headings ? headingOf(line) : null;
    if (h) {
      flush();
      out.push({ kind: 'heading', level: h.level, text: h.text });
    } else if (!line.trim()) flush();
    else para.push(line);
  }
  flush();
  return out;
}

/** The structured text of blocks (what a document's `content` holds). */
export function renderBlocks(blocks: Block[]): string {
  return blocks.map((b) => (b.kind === 'heading' ? `${'#'.repeat(b.level)} ${b.text}` : b.text)).join('\n\n');
}

/** A paragraph longer than MAX_WORDS, cut at sentence ends (or, lacking them, every MAX_WORDS words). */
function pieces(paragraph: string): string[] {
  if (countWords(paragraph) <= MAX_WORDS) return [paragraph];
  const sentences = paragraph.split(/(?<=[.!?…;])\s+/u);
  const out: string[] = [];
  let cur: string[] = [];
  let n = 0;
  const push = () => {
    if (cur.length) out.push(cur.join(' '));
    cur = [];
    n = 0;
  };
  for (const s of sentences) {
    const words = s.split(/\s+/).filter(Boolean);
    if (words.length > MAX_WORDS) {
      push();
      for (let i = 0; i < words.length; i += TARGET_WORDS) out.push(words.slice(i, i + TARGET_WORDS).join(' '));
      continue;
    }
    if (n + words.length > TARGET_WORDS && n > 0) push();
    cur.push(s);
    n += words.length;
  }
  push();
  return out;
}

/** The last ~OVERLAP_WORDS words of a text, starting at a word. */
function tail(text: string): string {
  const words = text.split(/\s+/).filter(Boolean);
  return words.length <= OVERLAP_WORDS ? '' : words.slice(-OVERLAP_WORDS).join(' ');
}

/** Chunks of a document's blocks (see the module comment). */
export function chunkBlocks(blocks: Block[]): Chunk[] {
  const chunks: Chunk[] = [];
  const stack: { level: number; text: string }[] = [];
  let parts: string[] = [];
  let words = 0;
  let fresh = 0; // words in `parts` that are not overlap from the previous chunk
  const headings = () => stack.map((s) => s.text);
  const emit = () => {
    if (fresh > 0) {
      const text = parts.join('\n\n');
      chunks.push({ position: chunks.length, headings: headings(), text, words: countWords(text) });
    }
    parts = [];
    words = 0;
    fresh = 0;
  };
  for (const b of blocks) {
    if (b.kind === 'heading') {
      emit();
      while (stack.length && stack[stack.length - 1]!.level >= b.level) stack.pop();
      stack.push({ level: b.level, text: b.text });
      continue;
    }
    for (const piece of pieces(b.text)) {
      const n = countWords(piece);
      if (fresh > 0 && words + n > TARGET_WORDS) {
        const carried = tail(parts.join(' '));
        emit();
        if (carried) {
          parts.push(`… ${carried}`);
          words = countWords(carried);
        }
      }
      parts.push(piece);
      words += n;
      fresh += n;
    }
  }
  emit();
  return chunks;
}

/** A document's chunks from its stored content and format. */
export function chunkContent(content: string, format: string): Chunk[] {
  return chunkBlocks(parseBlocks(content, { headings: format !== 'text' }));
}

/** How a chunk's heading path is shown (and indexed with the document title). */
export const headingPath = (headings: string[]): string => headings.join(' › ');
