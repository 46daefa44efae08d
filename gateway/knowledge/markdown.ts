import { normaliseText, parseBlocks, type Block } from '../../lib/knowledge/chunker.js';

/**
 * Markdown → blocks: the inline syntax a reader does not see (links, images, emphasis, code
 * marks, fences, setext underlines, quote marks) left out, headings kept.
 *
 * Each inline rule reads as a pattern would (`![alt](src)` → `alt`, …) and the rules apply
 * one after the other, but each is a scan in one pass: as regular expressions, an opening
 * mark without its closing one (`![` repeated) made the engine read the rest of the line
 * again from every mark, which took seconds for a line of a few hundred kilobytes.
 */

/** The first index ≥ `from` of `needle`, remembered: asked with a growing `from`, the line is read once. */
function finder(line: string, needle: string): (from: number) => number {
  let found = -2;
  let askedFrom = 0;
  return (from) => {
    if (found === -2 || from < askedFrom || (found !== -1 && found < from)) {
      found = line.indexOf(needle, from);
      askedFrom = from;
    }
    return found;
  };
}

const WHITESPACE = /\s/;
const isSpace = (c: string | undefined): boolean => c !== undefined && WHITESPACE.test(c);
const isLetter = (c: string | undefined): boolean => c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
const isLineEnd = (c: string | undefined): boolean => c === '\n' || c === '\r' || c === '\u2028' || c === '\u2029';

/**
 * Rewrites each match of one rule, left to right: `next(from)` is where a match may start,
 * `match(i)` where a match starting at i ends (the index after it) and what replaces it, or
 * null; the scan goes on after a match, else after i.
 */
function rewrite(line: string, next: (from: number) => number, match: (i: number) => { end: number; text: string } | null): string {
  let out = '';
  let copied = 0;
  for (let i = next(0); i !== -1; ) {
    const m = match(i);
    if (m) {
      out += line.slice(copied, i) + m.text;
      copied = m.end;
      i = next(m.end);
    } else i = next(i + 1);
  }
  return copied === 0 ? line : out + line.slice(copied);
}

/** `![alt](src)` → alt, as /!\[([^\]]*)\]\([^)]*\)/g. */
function images(line: string): string {
  const close = finder(line, ']');
  const paren = finder(line, ')');
  return rewrite(line, finder(line, '!['), (i) => {
    const j = close(i + 2);
    if (j === -1 || line[j + 1] !== '(') return null;
    const k = paren(j + 2);
    return k === -1 ? null : { end: k + 1, text: line.slice(i + 2, j) };
  });
}

/** `[text](href)` → text, as /\[([^\]]+)\]\([^)]*\)/g. */
function links(line: string): string {
  const close = finder(line, ']');
  const paren = finder(line, ')');
  return rewrite(line, finder(line, '['), (i) => {
    const j = close(i + 1);
    if (j === -1 || j === i + 1 || line[j + 1] !== '(') return null;
    const k = paren(j + 2);
    return k === -1 ? null : { end: k + 1, text: line.slice(i + 1, j) };
  });
}

/** Inline HTML tags removed, as /<\/?[a-z][^>]*>/gi. */
function tags(line: string): string {
  const close = finder(line, '>');
  return rewrite(line, finder(line, '<'), (i) => {
    const name = line[i + 1] === '/' ? i + 2 : i + 1;
    if (!isLetter(line[name])) return null;
    const k = close(name + 1);
    return k === -1 ? null : { end: k + 1, text: '' };
  });
}

/**
 * `**strong**` and `__strong__` → strong, as /(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g: the text
 * starts with a non-space, holds no line break, and ends at the first same mark after a
 * non-space.
 */
function strong(line: string): string {
  const stars = finder(line, '**');
  const unders = finder(line, '__');
  const closing = { '**': closingMark(line, '**'), __: closingMark(line, '__') };
  let lineEnd = -2;
  const lineEndFrom = (from: number) => {
    if (lineEnd !== -1 && lineEnd < from) {
      lineEnd = -1;
      for (let k = from; k < line.length; k++) {
        if (isLineEnd(line[k])) {
          lineEnd = k;
          break;
        }
      }
    }
    return lineEnd;
  };
  const next = (from: number) => {
    const a = stars(from);
    const b = unders(from);
    return a === -1 ? b : b === -1 ? a : Math.min(a, b);
  };
  return rewrite(line, next, (i) => {
    const mark = line[i] === '*' ? '**' : '__';
    const start = i + 2;
    if (start >= line.length || isSpace(line[start])) return null;
    const end = closing[mark](start + 1);
    if (end === -1) return null;
    const brk = lineEndFrom(start);
    if (brk !== -1 && brk < end) return null;
    return { end: end + 2, text: line.slice(start, end) };
  });
}

/** The first index ≥ `from` where `mark` follows a non-space, remembered as finder's. */
function closingMark(line: string, mark: string): (from: number) => number {
  let found = -2;
  return (from) => {
    if (found !== -1 && found < from) {
      found = from;
      for (;;) {
        found = line.indexOf(mark, found);
        if (found === -1 || !isSpace(line[found - 1])) break;
        found++;
      }
    }
    return found;
  };
}

/** Blocks of a markdown text. */
export function markdownBlocks(text: string): Block[] {
  const lines = normaliseText(text).split('\n');
  const out: string[] = [];
  let fence = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s*(```|~~~)/.test(line)) {
      fence = !fence;
      continue;
    }
    if (fence) {
      out.push(line);
      continue;
    }
    // Setext headings: "Title\n=====" / "Title\n-----".
    const next = lines[i + 1];
    if (line.trim() && next !== undefined && /^\s*(=+|-+)\s*$/.test(next) && !/^\s*[-*+]\s/.test(line)) {
      out.push(`${next.trim().startsWith('=') ? '#' : '##'} ${line.trim()}`);
      i++;
      continue;
    }
    out.push(
      strong(tags(links(images(line))))
        // Each of these reads from a mark to the next one at most, once: linear as they are.
        .replace(/(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?!\w)/g, '$1')
        .replace(/`([^`]+)`/g, '$1')
        .replace(/^\s{0,3}>\s?/, ''),
    );
  }
  return parseBlocks(out.join('\n'), { headings: true });
}
