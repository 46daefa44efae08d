import t from 'tap';
import { deflateSync } from 'node:zlib';
import { defusePdf, PdfTooLarge } from '../../gateway/knowledge/pdf-budget.js';
import { readPdfLines } from '../../gateway/knowledge/pdf.js';
import { deflatedSpaces, makePdf, pdfOfObjects, pdfStream } from '../support/pdf.js';

// What a PDF's streams expand to, measured before PDF.js reads the file (gateway/knowledge/pdf-budget.ts).
const MB = 1024 * 1024;

/** A one-page PDF whose page content is `content`, its dictionary `dict` (filters). */
const onePage = (content: Buffer, dict: string, extra: (Buffer | { inside: number; at: number })[] = []) =>
  pdfOfObjects(
    [
      Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
      Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>'),
      Buffer.from('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>'),
      pdfStream(dict, content),
      Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'),
      ...extra,
    ],
    1,
  );
const TEXT = Buffer.from('BT /F1 12 Tf 1 0 0 1 50 700 Tm (Descale the kettle every month.) Tj ET');

t.test('a PDF compressed twice over more spaces than the budget: refused before it is read, in little memory', async (t) => {
  const inner = await deflatedSpaces(128);
  const bomb = onePage(deflateSync(inner), '/Filter [/FlateDecode /FlateDecode]');
  t.ok(bomb.length < 64 * 1024, `${bomb.length} bytes of PDF`);
  const before = process.memoryUsage().rss;
  const started = performance.now();
  await t.rejects(defusePdf(bomb, 32 * MB), new PdfTooLarge(32 * MB), 'the PDF expands to more than 32 MB');
  t.ok(performance.now() - started < 2000, `measured in ${Math.round(performance.now() - started)} ms`);
  t.ok(process.memoryUsage().rss - before < 160 * MB, `memory grew by ${Math.round((process.memoryUsage().rss - before) / MB)} MB (the budget is 32 MB)`);
  await t.rejects(readPdfLines(bomb, { budgetBytes: 32 * MB }), { name: 'PdfTooLarge', message: 'the PDF expands to more than 32 MB' }, 'the reader refuses it the same way');
});

t.test('every stage of a chain counts: ASCII85 over Flate, hex, run-length, LZW', async (t) => {
  const content = Buffer.alloc(3 * MB, 0x20);
  const ascii85 = (b: Buffer) => {
    let out = '';
    for (let i = 0; i < b.length; i += 4) {
      const chunk = Buffer.concat([b.subarray(i, i + 4), Buffer.alloc(4)]).readUInt32BE(0);
      const n = Math.min(4, b.length - i);
      if (chunk === 0 && n === 4) {
        out += 'z';
        continue;
      }
      let v = chunk;
      const digits = [];
      for (let k = 0; k < 5; k++) {
        digits.unshift(String.fromCharCode((v % 85) + 33));
        v = Math.floor(v / 85);
      }
      out += digits.slice(0, n + 1).join('');
    }
    return Buffer.from(`${out}~>`);
  };
  const a85 = onePage(ascii85(deflateSync(content)), '/Filter [/ASCII85Decode /FlateDecode]');
  const { expandedBytes } = await defusePdf(Buffer.from(a85), 16 * MB);
  t.ok(expandedBytes >= 3 * MB && expandedBytes < 3 * MB + 64 * 1024, `${expandedBytes} bytes counted for 3 MiB of content`);
  await t.rejects(defusePdf(Buffer.from(a85), 2 * MB), { name: 'PdfTooLarge' }, 'past a smaller budget: refused');

  const hex = onePage(Buffer.from(`${deflateSync(content).toString('hex')}>`), '/Filter [/ASCIIHexDecode /FlateDecode]');
  await t.rejects(defusePdf(hex, 2 * MB), { name: 'PdfTooLarge' }, 'hex, then Flate');
  // Run-length: 2 bytes make 128.
  const runs = Buffer.alloc(2 * 40_000);
  for (let i = 0; i < runs.length; i += 2) [runs[i], runs[i + 1]] = [129, 0x20];
  await t.rejects(defusePdf(onePage(runs, '/Filter /RunLengthDecode'), 4 * MB), { name: 'PdfTooLarge' }, 'run-length: 80 KB → 5 MB');
  t.equal((await defusePdf(onePage(runs, '/Filter /RunLengthDecode'), 8 * MB)).expandedBytes, 40_000 * 128);
  // LZW (9-bit codes): the same code repeated builds ever longer entries.
  const codes = [256, 32];
  for (let next = 258, code = 32; next < 510; next++) codes.push((code = next));
  let bits = '';
  for (const c of codes) bits += c.toString(2).padStart(9, '0');
  const lzw = Buffer.from(bits.padEnd(Math.ceil(bits.length / 8) * 8, '0').match(/.{8}/g)!.map((b) => parseInt(b, 2)));
  const { expandedBytes: lzwBytes } = await defusePdf(onePage(lzw, '/Filter /LZWDecode'), 8 * MB);
  t.ok(lzwBytes > 20_000, `LZW: ${lzw.length} bytes expand to ${lzwBytes}`);
});

t.test('ordinary PDFs: measured, read as before', async (t) => {
  const file = makePdf([[{ text: 'Kettle manual', size: 18 }, { text: 'Fill the kettle up to the MAX mark.' }]]);
  t.same(await defusePdf(Buffer.from(file), MB), { expandedBytes: 0 }, 'uncompressed content expands to nothing');
  const flate = onePage(deflateSync(TEXT), '/Filter /FlateDecode');
  t.same(await defusePdf(Buffer.from(flate), MB), { expandedBytes: TEXT.length });
  const { pages } = await readPdfLines(flate, { budgetBytes: MB });
  t.same(pages.flat().map((l) => l.text), ['Descale the kettle every month.']);
});

t.test('images and attachments are never decoded for text: not counted, and blanked for the reader', async (t) => {
  const inner = await deflatedSpaces(64);
  const image = pdfStream('/Type /XObject /Subtype /Image /Width 8192 /Height 8192 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter [/FlateDecode /FlateDecode]', deflateSync(inner));
  const withImage = onePage(deflateSync(TEXT), '/Filter /FlateDecode', [image]);
  t.same(await defusePdf(Buffer.from(withImage), 4 * MB), { expandedBytes: TEXT.length }, 'a 64 MiB image does not count against a 4 MB budget');
  const { pages } = await readPdfLines(withImage, { budgetBytes: 4 * MB });
  t.same(pages.flat().map((l) => l.text), ['Descale the kettle every month.'], 'the text is read');

  // The same bomb labelled an image but named as the page's content: blanked, it expands to nothing.
  const disguised = onePage(deflateSync(inner), '/Subtype /Image /Filter [/FlateDecode /FlateDecode]');
  const before = process.memoryUsage().rss;
  t.same((await readPdfLines(disguised, { budgetBytes: 4 * MB })).pages, [[]], 'nothing to read');
  t.ok(process.memoryUsage().rss - before < 64 * MB, `memory grew by ${Math.round((process.memoryUsage().rss - before) / MB)} MB`);
});

t.test('a filter named indirectly is resolved; one that cannot be is refused', async (t) => {
  const bodies = (filter: string) => onePage(deflateSync(Buffer.alloc(2 * MB, 0x20)), `/Filter ${filter}`, [Buffer.from('[/FlateDecode]')]);
  await t.rejects(defusePdf(bodies('6 0 R'), MB), { name: 'PdfTooLarge', message: 'the PDF expands to more than 1 MB' }, 'resolved to [/FlateDecode]: measured');
  await t.rejects(defusePdf(bodies('9 0 R'), MB), { name: 'PdfTooLarge', message: /filters cannot be read/ }, 'an object that is not there');
});

t.test('linear in the file: a long run of tokens, strings, unmatched brackets', async (t) => {
  for (const [label, body] of [
    ['200,000 unmatched >>', `[ ${'1 '.repeat(200_000)}${'>> '.repeat(200_000)} ]`],
    ['nested << 100,000 deep', '<< /A '.repeat(100_000)],
    ['200,000 names', '/N '.repeat(200_000)],
    ['an unterminated string', `(${'a('.repeat(200_000)}`],
  ] as const) {
    const file = onePage(TEXT, '', [Buffer.from(body)]);
    const started = performance.now();
    await defusePdf(file, MB);
    const ms = performance.now() - started;
    t.ok(ms < 1000, `${label} (${Math.round(file.length / 1024)} KB): ${Math.round(ms)} ms`);
  }
});

t.test("PDF.js's typed failures become the document's reason; its others say the PDF cannot be read", async (t) => {
  await t.rejects(readPdfLines(Buffer.from('hello, not a PDF at all'), { budgetBytes: MB }), { name: 'PdfError', message: 'the file is not a valid PDF', cause: { name: 'InvalidPDFException' } });
  // Encrypted with a user password that is not the empty one (PDF.js tries that first).
  const ab = (bytes: number) => 'ab'.repeat(bytes);
  const locked = makePdf([[{ text: 'Secret' }]])
    .toString('latin1')
    .replace(/trailer\n<< /, `trailer\n<< /Encrypt << /Filter /Standard /V 1 /R 2 /O <${ab(32)}> /U <${ab(32)}> /P -4 >> /ID [<${ab(16)}> <${ab(16)}>] `);
  await t.rejects(readPdfLines(Buffer.from(locked, 'latin1'), { budgetBytes: MB }), { name: 'PdfError', message: 'the PDF is password-protected', cause: { name: 'PasswordException' } });
});
