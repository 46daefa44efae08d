import type { Block } from '../../lib/knowledge/chunker.js';
import { parseHtml } from './html-parser.js';

/**
 * HTML → blocks: headings (h1–h6) and paragraphs (block elements), the page's title. What a
 * reader would not call content is left out: scripts, styles, forms, navigation, headers,
 * footers and asides; when the page marks its content (`<main>`, `<article>`, role="main"),
 * only that is kept. Entities are decoded; whitespace is collapsed except in `<pre>`. Each
 * event costs the same whatever the page's depth (html-parser.ts).
 */
const SKIP = new Set(['script', 'style', 'noscript', 'template', 'svg', 'math', 'head', 'nav', 'footer', 'aside', 'form', 'button', 'select', 'textarea', 'iframe', 'object', 'canvas', 'dialog']);
// A Map: a tag named like an object's property (`<constructor>`) is no heading.
const HEADINGS = new Map([['h1', 1], ['h2', 2], ['h3', 3], ['h4', 4], ['h5', 5], ['h6', 6]]);
const BLOCK = new Set([
  'p', 'div', 'section', 'article', 'main', 'header', 'li', 'ul', 'ol', 'dl', 'dt', 'dd', 'table', 'thead', 'tbody', 'tr', 'blockquote', 'pre',
  'figure', 'figcaption', 'address', 'details', 'summary', 'hr', 'body', 'center',
]);
const VOID = new Set(['br', 'hr', 'img', 'input', 'meta', 'link', 'area', 'base', 'col', 'embed', 'source', 'track', 'wbr']);

export interface HtmlText {
  title: string | null;
  blocks: Block[];
}

export function htmlToBlocks(html: string): HtmlText {
  const all: { block: Block; main: boolean }[] = [];
  let title: string | null = null;
  let inTitle = false;
  let titleText = '';
  let skipDepth = 0;
  let mainDepth = 0;
  let preDepth = 0;
  let heading: number | null = null;
  let line = '';
  // Whether `line` holds more than whitespace, kept as it grows: a row of cells asks at each one.
  let lineHasText = false;
  let lines: string[] = [];
  const stack: { name: string; skip: boolean; main: boolean }[] = [];
  const open = new Map<string, number>();

  const endLine = () => {
    const t = (preDepth ? line : line.replace(/\s+/g, ' ')).trim();
    if (t) lines.push(t);
    line = '';
    lineHasText = false;
  };
  const endBlock = () => {
    endLine();
    if (lines.length) {
      const text = lines.join('\n');
      all.push({ block: heading !== null ? { kind: 'heading', level: heading, text: text.replace(/\s+/g, ' ') } : { kind: 'paragraph', text }, main: mainDepth > 0 });
    }
    lines = [];
  };

  parseHtml(html, {
    onopentag(name, attribs) {
      if (name === 'title' && title === null) inTitle = true;
      const skip = SKIP.has(name) || attribs.hidden !== undefined || attribs['aria-hidden'] === 'true';
      const main = name === 'main' || name === 'article' || attribs.role === 'main';
      if (!VOID.has(name)) {
        stack.push({ name, skip, main });
        open.set(name, (open.get(name) ?? 0) + 1);
      }
      if (skip) skipDepth++;
      if (main) mainDepth++;
      if (skipDepth) return;
      if (HEADINGS.has(name)) {
        endBlock();
        heading = HEADINGS.get(name)!;
      } else if (BLOCK.has(name)) {
        endBlock();
        if (name === 'pre') preDepth++;
        if (name === 'li') {
          line = '- ';
          lineHasText = true;
        }
      } else if (name === 'br') endLine();
      else if ((name === 'td' || name === 'th') && lineHasText) line += ' | ';
    },
    ontext(text) {
      if (inTitle) titleText += text;
      if (!skipDepth) {
        line += text;
        lineHasText ||= /\S/.test(text);
      }
    },
    onclosetag(name) {
      if (name === 'title' && inTitle) {
        inTitle = false;
        title = titleText.replace(/\s+/g, ' ').trim() || null;
      }
      if (VOID.has(name) || !open.get(name)) return;
      // Pop to the matching element (the parser reports implied closes too).
      const wasSkipping = skipDepth > 0;
      let c;
      do {
        c = stack.pop()!;
        open.set(c.name, open.get(c.name)! - 1);
        if (c.skip) skipDepth--;
        if (c.main) mainDepth = Math.max(0, mainDepth - 1);
        if (c.name === 'pre') preDepth = Math.max(0, preDepth - 1);
      } while (c.name !== name);
      if (wasSkipping && skipDepth > 0) return;
      if (HEADINGS.has(name)) {
        endBlock();
        heading = null;
      } else if (BLOCK.has(name)) endBlock();
    },
  });
  endBlock();

  const marked = all.some((b) => b.main);
  const blocks = all.filter((b) => !marked || b.main).map((b) => b.block);
  const firstH1 = blocks.find((b) => b.kind === 'heading' && b.level === 1)?.text ?? null;
  return { title: title ?? firstH1, blocks };
}

/** The charset a page declares (Content-Type header, else a `<meta>` near its start); utf-8 when none. */
export function charsetOf(contentType: string | undefined, head: Buffer): string {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? '')?.[1];
  const fromMeta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head.subarray(0, 4096).toString('latin1'))?.[1];
  const name = (fromHeader ?? fromMeta ?? 'utf-8').toLowerCase();
  try {
    new TextDecoder(name);
    return name;
  } catch {
    return 'utf-8';
  }
}
