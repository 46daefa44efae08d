import type { Block } from '../../lib/knowledge/chunker.js';
import { defusePdf } from './pdf-budget.js';

/**
 * PDF → blocks. PDF.js (pdfjs-dist's legacy build, no network, no eval) reads the file in
 * the ingestion worker thread (parse-worker.ts), after pdf-budget.ts has measured what its
 * streams expand to against the memory budget. Lines set in a larger type than the body
 * text become headings (the largest size is level 1); a vertical gap larger than the line
 * spacing starts a new paragraph.
 */
export const MAX_PDF_PAGES = 1000;

export interface PdfLine {
  text: string;
  size: number;
  y: number;
}

/** A PDF that cannot be read, or holds no text: the document fails with this message. */
export class PdfError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PdfError';
  }
}

/** PDF.js's typed exceptions (told apart by their `name`, the type it gives them) the user can act on. */
const PDFJS_FAILURES: Partial<Record<string, string>> = {
  PasswordException: 'the PDF is password-protected',
  InvalidPDFException: 'the file is not a valid PDF',
};

/** A failure of PDF.js as the document's PdfError. */
function unreadable(err: unknown): PdfError {
  const known = err instanceof Error ? PDFJS_FAILURES[err.name] : undefined;
  return new PdfError(known ?? `the PDF cannot be read (${(err as Error)?.message ?? 'unknown error'})`, { cause: err });
}

interface TextItem {
  str?: unknown;
  transform: number[];
  height?: number;
  hasEOL?: boolean;
}

const isSpace = (c: string | undefined) => c !== undefined && /\s/.test(c);

/**
 * One page's text items joined into lines ({ text, size, y }). A line is kept as its pieces
 * and its last character: reading the end of a string built by `+=` flattens it, once per
 * item, which made a line of 100,000 items take seconds.
 */
function pageLines(items: TextItem[]): PdfLine[] {
  const lines: PdfLine[] = [];
  let cur: { parts: string[]; last: string | undefined; size: number; y: number } | null = null;
  const end = () => {
    if (cur) lines.push({ text: cur.parts.join(''), size: cur.size, y: cur.y });
    cur = null;
  };
  for (const item of items) {
    if (typeof item.str !== 'string') continue;
    const y = item.transform[5]!;
    const size = Math.abs(item.height || item.transform[3] || 0);
    if (cur && Math.abs(cur.y - y) > Math.max(1, (cur.size || size) * 0.5)) end();
    cur ??= { parts: [], last: undefined, size: 0, y };
    if (item.str) {
      if (cur.last !== undefined && !isSpace(cur.last) && !isSpace(item.str[0])) cur.parts.push(' ');
      cur.parts.push(item.str);
      cur.last = item.str[item.str.length - 1];
      cur.size = Math.max(cur.size, size);
    }
    if (item.hasEOL) end();
  }
  end();
  return lines.filter((l) => l.text.trim());
}

/**
 * The text lines of each page (at most maxPages). `data` is changed: the streams reading
 * text never decodes are blanked (pdf-budget.ts). Throws PdfTooLarge past `budgetBytes`.
 */
export async function readPdfLines(data: Buffer, options: { budgetBytes: number; maxPages?: number }): Promise<{ pages: PdfLine[][]; numPages: number }> {
  await defusePdf(data, options.budgetBytes);
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  let doc;
  try {
    // A copy: PDF.js takes (detaches) the buffer it is given.
    doc = await getDocument({ data: new Uint8Array(data), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, stopAtErrors: false, verbosity: 0 }).promise;
  } catch (err) {
    throw unreadable(err);
  }
  try {
    const pages: PdfLine[][] = [];
    const count = Math.min(doc.numPages, options.maxPages ?? MAX_PDF_PAGES);
    for (let n = 1; n <= count; n++) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      pages.push(pageLines(content.items as TextItem[]));
      page.cleanup();
    }
    return { pages, numPages: doc.numPages };
  } catch (err) {
    throw unreadable(err);
  } finally {
    await doc.destroy();
  }
}

/** A page without text, with no cross-reference table (PDF.js rebuilds it). */
const EMPTY_PDF = '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n';

/** Loads PDF.js (its two modules, about a second the first time) by reading an empty page. */
export async function warmUpPdfReader(): Promise<void> {
  await readPdfLines(Buffer.from(EMPTY_PDF, 'latin1'), { budgetBytes: 1024 * 1024 }).catch(() => {});
}

/** Blocks of the pages' lines (see the module comment). */
export function pdfLinesToBlocks(pages: PdfLine[][]): Block[] {
  const lines = pages.flat();
  // The body size: the size carrying most characters.
  const weight = new Map<number, number>();
  for (const l of lines) {
    const s = Math.round(l.size * 2) / 2;
    weight.set(s, (weight.get(s) ?? 0) + l.text.length);
  }
  const body = [...weight.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
  const headingSizes = [...weight.keys()].filter((s) => s >= body * 1.15 && s > 0).sort((a, b) => b - a).slice(0, 6);
  const levelOf = (size: number) => {
    const i = headingSizes.indexOf(Math.round(size * 2) / 2);
    return i < 0 ? null : i + 1;
  };

  const blocks: Block[] = [];
  let para: string[] = [];
  const flush = () => {
    const t = para.join(' ').replace(/\s+/g, ' ').replace(/(\p{L})- (\p{Ll})/gu, '$1$2').trim();
    if (t) blocks.push({ kind: 'paragraph', text: t });
    para = [];
  };
  for (const page of pages) {
    let prev: PdfLine | null = null;
    for (const l of page) {
      const text = l.text.replace(/\s+/g, ' ').trim();
      if (!text) continue;
      const level = levelOf(l.size);
      if (level !== null && text.split(' ').length <= 20) {
        flush();
        const last = blocks[blocks.length - 1];
        // A heading set over two lines is one heading.
        if (last?.kind === 'heading' && last.level === level && prev && levelOf(prev.size) === level) last.text += ` ${text}`;
        else blocks.push({ kind: 'heading', level, text });
        prev = l;
        continue;
      }
      if (prev && Math.abs(prev.y - l.y) > Math.max(l.size, prev.size) * 1.9) flush();
      para.push(text);
      prev = l;
    }
    flush();
  }
  return blocks;
}
