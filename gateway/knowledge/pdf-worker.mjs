// Runs in a worker thread (gateway/knowledge/pdf.ts): PDF.js parses the file off the main
// thread, within the worker's memory limits, and posts back the text lines of each page
// ({ text, size, y }) or an error. Plain JavaScript: worker threads do not get the
// TypeScript loader of the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

async function extract(data, maxPages) {
  const doc = await getDocument({ data, isEvalSupported: false, disableFontFace: true, useSystemFonts: false, stopAtErrors: false, verbosity: 0 }).promise;
  const pages = [];
  const numPages = doc.numPages;
  const count = Math.min(doc.numPages, maxPages);
  for (let n = 1; n <= count; n++) {
    const page = await doc.getPage(n);
    const content = await page.getTextContent();
    const lines = [];
    let cur = null;
    for (const item of content.items) {
      if (typeof item.str !== 'string') continue;
      const y = item.transform[5];
      const size = Math.abs(item.height || item.transform[3] || 0);
      if (cur && Math.abs(cur.y - y) > Math.max(1, (cur.size || size) * 0.5)) {
        lines.push(cur);
        cur = null;
      }
      if (!cur) cur = { text: '', size: 0, y };
      if (item.str) {
        cur.text += (cur.text && !/\s$/.test(cur.text) && !/^\s/.test(item.str) ? ' ' : '') + item.str;
        cur.size = Math.max(cur.size, size);
      }
      if (item.hasEOL) {
        lines.push(cur);
        cur = null;
      }
    }
    if (cur) lines.push(cur);
    pages.push(lines.filter((l) => l.text.trim()));
    page.cleanup();
  }
  await doc.destroy();
  return { pages, numPages };
}

extract(new Uint8Array(workerData.data), workerData.maxPages).then(
  (out) => parentPort.postMessage({ ok: true, ...out }),
  (err) => parentPort.postMessage({ ok: false, name: err?.name ?? 'Error', message: String(err?.message ?? err) }),
);
