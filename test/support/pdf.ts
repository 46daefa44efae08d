import { once } from 'node:events';
import { createDeflate } from 'node:zlib';

/**
 * A small, valid PDF built in code (no fixture file): one page per entry, each line set in
 * Helvetica at its size (a larger size is how a PDF marks a heading). `lines: []` gives a
 * page with no text at all (what a scanned document looks like to a text extractor).
 */
export interface PdfLine {
  text: string;
  size?: number;
}

const escape = (s: string) => s.replace(/[\\()]/g, (c) => `\\${c}`);

export function makePdf(pages: PdfLine[][]): Buffer {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body);
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'); // 1
  const pagesId = 2;
  add(''); // 2: the page tree, filled in below
  const kids: number[] = [];
  for (const lines of pages) {
    let y = 760;
    let stream = lines.length ? 'BT\n' : '0 0 1 rg 100 100 200 200 re f\n';
    for (const l of lines) {
      const size = l.size ?? 11;
      stream += `/F1 ${size} Tf 1 0 0 1 50 ${y} Tm (${escape(l.text)}) Tj\n`;
      y -= size * 1.5;
    }
    if (lines.length) stream += 'ET\n';
    const content = add(`<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}endstream`);
    kids.push(add(`<< /Type /Page /Parent ${pagesId} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 1 0 R >> >> /Contents ${content} 0 R >>`));
  }
  objects[pagesId - 1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;
  const catalog = add(`<< /Type /Catalog /Pages ${pagesId} 0 R >>`);
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** A stream object's body: its dictionary (with /Length) and data. */
export function pdfStream(dict: string, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`<< ${dict} /Length ${data.length} >>\nstream\n`, 'latin1'), data, Buffer.from('\nendstream', 'latin1')]);
}

/**
 * A PDF of objects given as their bodies (object n is `bodies[n - 1]`; `root` the catalog's
 * number), with a correct cross-reference table: for files built to test the reader's limits.
 * An entry `{ inside, at }` is an object written inside another one's body (`at` bytes into
 * the body of object `inside`), as a crafted file may hide one in another stream's data.
 */
export function pdfOfObjects(bodies: (Buffer | { inside: number; at: number })[], root: number): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n', 'latin1')];
  let length = parts[0]!.length;
  const offsets = new Map<number, number>();
  bodies.forEach((body, i) => {
    if (!Buffer.isBuffer(body)) return;
    const head = Buffer.from(`${i + 1} 0 obj\n`, 'latin1');
    offsets.set(i + 1, length + head.length);
    const whole = Buffer.concat([head, body, Buffer.from('\nendobj\n', 'latin1')]);
    parts.push(whole);
    length += whole.length;
  });
  const offsetOf = (n: number): number => {
    const body = bodies[n - 1]!;
    return Buffer.isBuffer(body) ? offsets.get(n)! - `${n} 0 obj\n`.length : offsets.get(body.inside)! + body.at;
  };
  const rows = bodies.map((_, i) => `${String(offsetOf(i + 1)).padStart(10, '0')} 00000 n \n`).join('');
  parts.push(Buffer.from(`xref\n0 ${bodies.length + 1}\n0000000000 65535 f \n${rows}trailer\n<< /Size ${bodies.length + 1} /Root ${root} 0 R >>\nstartxref\n${length}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}

/** `mib` MiB of spaces deflated (zlib), written 1 MiB at a time: a bomb's inner stream, never held whole. */
export async function deflatedSpaces(mib: number): Promise<Buffer> {
  const deflate = createDeflate({ level: 9 });
  const parts: Buffer[] = [];
  deflate.on('data', (b: Buffer) => parts.push(b));
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  for (let i = 0; i < mib; i++) if (!deflate.write(chunk)) await once(deflate, 'drain');
  deflate.end();
  await once(deflate, 'end');
  return Buffer.concat(parts);
}
