import { DEFAULT_INGEST_MEMORY_MB } from '../../lib/config.js';
import { parseBlocks, renderBlocks, type Block } from '../../lib/knowledge/chunker.js';
import { charsetOf, htmlToBlocks } from './html.js';
import { markdownBlocks } from './markdown.js';
import { PdfTooLarge } from './pdf-budget.js';
import { PdfError, pdfLinesToBlocks, readPdfLines } from './pdf.js';

/**
 * A document's original (text, markdown, HTML, PDF) → its structured text
 * (lib/knowledge/chunker.ts) and, when the original names one, a title. Throws
 * ExtractionError with a message for the user (the document's `error`) when there is
 * nothing to index.
 */
export type DocumentFormat = 'text' | 'markdown' | 'html' | 'pdf';
export const DOCUMENT_FORMATS: readonly DocumentFormat[] = ['text', 'markdown', 'html', 'pdf'];

/** Extracted text beyond this is refused (about 300 pages of dense text). */
export const MAX_EXTRACTED_CHARS = 2_000_000;

export class ExtractionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ExtractionError';
  }
}

export interface Extracted {
  title: string | null;
  /** The structured text stored as the document's content. */
  content: string;
  /** `text` stays plain; every other format is stored as structured (markdown-style) text. */
  contentFormat: 'text' | 'markdown';
}

function finish(title: string | null, blocks: Block[], contentFormat: 'text' | 'markdown'): Extracted {
  const content = contentFormat === 'text' ? blocks.map((b) => b.text).join('\n\n') : renderBlocks(blocks);
  if (!blocks.some((b) => b.kind === 'paragraph' && /[\p{L}\p{N}]/u.test(b.text))) throw new ExtractionError('the document has no text to index');
  if (content.length > MAX_EXTRACTED_CHARS) throw new ExtractionError(`the document's text is longer than ${MAX_EXTRACTED_CHARS.toLocaleString('en')} characters; split it into several documents`);
  return { title: title?.slice(0, 500) ?? null, content, contentFormat };
}

/** Decodes bytes of a text format (a BOM or the declared charset wins; else UTF-8). */
export function decodeText(bytes: Buffer, contentType?: string): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return bytes.subarray(3).toString('utf8');
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  return new TextDecoder(charsetOf(contentType, bytes)).decode(bytes);
}

/**
 * The document's text. Runs in the ingestion worker thread (parse-worker.ts), in time linear
 * in the input; `budgetBytes` bounds what a PDF's streams may expand to.
 */
export async function extractDocument(input: { format: DocumentFormat; text?: string; bytes?: Buffer; contentType?: string; budgetBytes?: number }): Promise<Extracted> {
  switch (input.format) {
    case 'text':
      return finish(null, parseBlocks(input.text ?? decodeText(input.bytes!, input.contentType), { headings: false }), 'text');
    case 'markdown': {
      const blocks = markdownBlocks(input.text ?? decodeText(input.bytes!, input.contentType));
      const first = blocks[0];
      return finish(first?.kind === 'heading' && first.level === 1 ? first.text : null, blocks, 'markdown');
    }
    case 'html': {
      const { title, blocks } = htmlToBlocks(input.text ?? decodeText(input.bytes!, input.contentType));
      return finish(title, blocks, 'markdown');
    }
    case 'pdf': {
      const bytes = input.bytes!;
      if (bytes.subarray(0, 1024).indexOf('%PDF-') < 0) throw new ExtractionError('the file is not a PDF');
      try {
        const { pages } = await readPdfLines(bytes, { budgetBytes: input.budgetBytes ?? DEFAULT_INGEST_MEMORY_MB * 1024 * 1024 });
        const blocks = pdfLinesToBlocks(pages);
        if (!blocks.length) throw new ExtractionError('the PDF has no text layer (a scan or images only?); upload a PDF with selectable text');
        const first = blocks.find((b) => b.kind === 'heading');
        return finish(first?.text ?? null, blocks, 'markdown');
      } catch (err) {
        if (err instanceof PdfError || err instanceof PdfTooLarge) throw new ExtractionError(err.message, { cause: err });
        throw err;
      }
    }
  }
}

/** The format of a file, from its name (and, for a page, its Content-Type); null when unsupported. */
export function formatOf(name: string | null, contentType?: string | null): DocumentFormat | null {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/pdf') return 'pdf';
  if (type === 'text/html' || type === 'application/xhtml+xml') return 'html';
  if (type === 'text/markdown' || type === 'text/x-markdown') return 'markdown';
  const ext = /\.([a-z0-9]+)$/i.exec(name ?? '')?.[1]?.toLowerCase();
  if (ext === 'pdf') return 'pdf';
  if (ext === 'html' || ext === 'htm') return 'html';
  if (ext === 'md' || ext === 'markdown') return 'markdown';
  if (ext === 'txt' || ext === 'text') return 'text';
  if (type === 'text/plain') return 'text';
  return null;
}
