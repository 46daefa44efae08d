/**
 * How migration 0010 splits a stored document into chunks: lib/knowledge/chunker.ts (and the
 * `storable` of lib/text.ts it cleans text with) as they were when the migration was written.
 * Frozen here so the migration's result never follows later changes of the live chunker.
 * Never edit: a migration that has shipped must give the same result on every database.
 *
 * A chunk never spans two sections; a section's paragraphs are packed into chunks of about
 * TARGET_WORDS (a paragraph longer than MAX_WORDS is split at sentence ends), and a section
 * that needs several chunks repeats the last OVERLAP_WORDS of one chunk at the start of the
 * next. Each chunk keeps its heading path (the headings above it, outermost first).
 */
const TARGET_WORDS = 200;
const MAX_WORDS = 300;
const OVERLAP_WORDS = 40;

type Block = { kind: 'heading'; level: number; text: string } | { kind: 'paragraph'; text: string };

export interface Chunk {
  /** 0, 1, 2, … within the document. */
  position: number;
  /** The headings above the chunk, outermost first (empty for text before any heading). */
  headings: string[];
  text: string;
  words: number;
}

const HEADING = /^(#{1,6})[ \t]+(.+?)[ \t#]*$/;

const countWords = (text: string): number => (text.match(/\S+/g) ?? []).length;

/** U+0000 dropped, a lone surrogate made U+FFFD: what PostgreSQL text can hold. */
function storableString(s: string): string {
  const clean = s.includes('\u0000') ? s.replace(/\u0000/g, '') : s;
  return clean.isWellFormed() ? clean : clean.toWellFormed();
}

/** Line breaks made uniform, NUL and other control characters (but tabs and newlines) removed. */
function normaliseText(text: string): string {
  return storableString(text)
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0001-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    .replace(/[ \t\u00a0]+$/gm, '');
}

/** Blocks of a structured text (markdown headings when `headings`, else none). */
function parseBlocks(text: string, options: { headings: boolean }): Block[] {
  const out: Block[] = [];
  let para: string[] = [];
  const flush = () => {
    const t = para.join('\n').trim();
    if (t) out.push({ kind: 'paragraph', text: t });
    para = [];
  };
  for (const line of normaliseText(text).split('\n')) {
    const h = options.headings ? HEADING.exec(line) : null;
    if (h) {
      flush();
      out.push({ kind: 'heading', level: h[1]!.length, text: h[2]!.trim() });
    } else if (!line.trim()) flush();
    else para.push(line);
  }
  flush();
  return out;
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
function chunkBlocks(blocks: Block[]): Chunk[] {
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
