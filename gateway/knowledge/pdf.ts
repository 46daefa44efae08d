import { Worker } from 'node:worker_threads';
import type { Block } from '../../lib/knowledge/chunker.js';

/**
 * PDF → blocks. PDF.js (pdfjs-dist's legacy build, no network, no eval) parses the file in a
 * worker thread (pdf-worker.mjs) with a memory cap and a deadline, so a large or hostile PDF
 * neither blocks the gateway's event loop (webhooks keep flowing) nor takes the process
 * down. Lines set in a larger type than the body text become headings (the largest size is
 * level 1); a vertical gap larger than the line spacing starts a new paragraph.
 */
export const MAX_PDF_PAGES = 1000;
export const PDF_DEADLINE_MS = 60_000;
const WORKER_HEAP_MB = 512;

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

const WORKER_URL = new URL('./pdf-worker.mjs', import.meta.url);

/** The text lines of each page, read in a worker thread. */
export function readPdfLines(data: Buffer, options: { deadlineMs?: number; maxPages?: number; signal?: AbortSignal } = {}): Promise<{ pages: PdfLine[][]; numPages: number }> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) return reject(new PdfError('reading the PDF was stopped'));
    const worker = new Worker(WORKER_URL, {
      workerData: { data, maxPages: options.maxPages ?? MAX_PDF_PAGES },
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      stdout: true,
      stderr: true,
    });
    // PDF.js writes warnings about fonts it does not need for text; they are not ours to log.
    worker.stdout.resume();
    worker.stderr.resume();
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const onAbort = () => finish(() => reject(new PdfError('reading the PDF was stopped')));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => finish(() => reject(new PdfError(`reading the PDF took longer than ${Math.round((options.deadlineMs ?? PDF_DEADLINE_MS) / 1000)} s`))), options.deadlineMs ?? PDF_DEADLINE_MS);
    worker.on('message', (m: { ok: boolean; pages?: PdfLine[][]; numPages?: number; name?: string; message?: string }) => {
      if (m.ok) finish(() => resolve({ pages: m.pages!, numPages: m.numPages! }));
      else {
        const why = m.name === 'PasswordException' ? 'the PDF is password-protected' : m.name === 'InvalidPDFException' ? 'the file is not a valid PDF' : `the PDF cannot be read (${m.message ?? 'unknown error'})`;
        finish(() => reject(new PdfError(why)));
      }
    });
    worker.on('error', (err) => finish(() => reject(new PdfError(/memory/i.test(err.message) ? 'the PDF needs too much memory to read' : 'the PDF cannot be read', { cause: err }))));
    worker.on('exit', (code) => finish(() => reject(new PdfError(`the PDF reader stopped (exit code ${code})`))));
  });
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
