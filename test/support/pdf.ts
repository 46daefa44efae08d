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
