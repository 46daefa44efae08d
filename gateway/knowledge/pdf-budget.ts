import { constants as zlibConstants, createInflate, inflateSync } from 'node:zlib';

/**
 * What a PDF's streams expand to, measured before PDF.js reads it (pdf.ts): PDF.js inflates
 * a stream into one growing ArrayBuffer, outside the JavaScript heap that a worker thread's
 * resourceLimits cap, so a 4 KB file whose page content is compressed twice over 2 GiB of
 * spaces took the process to 3.4 GB. Here every stream's filter chain is decoded in turn
 * with what is left of the budget as its limit (zlib's `maxOutputLength`), each stage's
 * output counted, and the file is refused past the budget (PdfTooLarge) before PDF.js runs.
 *
 * The streams are found by one pass over the file as PDF.js's own parser reads objects
 * (`N G obj << … >> stream … endstream`, the data's extent from a `/Length` followed by
 * `endstream`, else the next `endstream`). Images (`/Subtype /Image`, or an image codec:
 * DCT, JPX, JBIG2, CCITT) and attached files are never decoded to read text: they are not
 * counted, and their data is blanked in the copy PDF.js gets, so a stream labelled an image
 * but named as a page's content cannot expand either. What this pass cannot see (an
 * encrypted file's streams, an object hidden inside another stream's data) is left to the
 * worker's memory watch (parse-pool.ts).
 */
export class PdfTooLarge extends Error {
  constructor(budgetBytes: number, message = `the PDF expands to more than ${Math.round(budgetBytes / 1024 / 1024)} MB`) {
    super(message);
    this.name = 'PdfTooLarge';
  }
}

class Name {
  constructor(readonly name: string) {}
}
class Ref {
  constructor(readonly key: string) {}
}
type Dict = Map<string, Value>;
type Value = number | boolean | null | Name | Ref | Value[] | Dict | Uint8Array;

/** The delimiters and whitespace of PDF's syntax (ISO 32000 7.2.2). */
const DELIMITER = new Uint8Array(256);
for (const c of '()<>[]{}/%') DELIMITER[c.charCodeAt(0)] = 1;
const WHITESPACE = new Uint8Array(256);
for (const c of [0, 9, 10, 12, 13, 32]) WHITESPACE[c] = 1;
const isRegular = (c: number) => !DELIMITER[c] && !WHITESPACE[c];

const IMAGE_CODECS = new Set(['DCTDecode', 'DCT', 'JPXDecode', 'JBIG2Decode', 'CCITTFaxDecode', 'CCF']);
const ENDSTREAM = Buffer.from('endstream', 'latin1');

interface StreamRecord {
  start: number;
  end: number;
  dict: Dict;
}

/** The streams of a PDF and the objects a stream's dictionary may point at (numbers and names only). */
function findStreams(data: Buffer): { streams: StreamRecord[]; objects: Map<string, Value> } {
  const streams: StreamRecord[] = [];
  const objects = new Map<string, Value>();
  const n = data.length;
  // Values being read; where each open container (dictionary or array) starts in `stack`.
  const stack: Value[] = [];
  const opened: { kind: '<<' | '['; at: number }[] = [];
  let objectKey: string | null = null;
  let pos = 0;

  const push = (v: Value) => {
    stack.push(v);
    // Outside any container only the last few values can matter (`N G obj`, `N G R`).
    if (opened.length === 0 && stack.length > 8) stack.splice(0, stack.length - 3);
  };
  const reset = () => {
    stack.length = 0;
    opened.length = 0;
  };
  /** The values of the innermost container when it is of this kind (a stray closing token is skipped). */
  const close = (kind: '<<' | '['): Value[] | null => {
    const top = opened[opened.length - 1];
    if (top?.kind !== kind) return null;
    opened.pop();
    return stack.splice(top.at);
  };
  const popNumbers = (): [number, number] | null => {
    const gen = stack[stack.length - 1];
    const num = stack[stack.length - 2];
    if (typeof gen !== 'number' || typeof num !== 'number') return null;
    stack.length -= 2;
    return [num, gen];
  };

  while (pos < n) {
    const c = data[pos]!;
    if (WHITESPACE[c]) {
      pos++;
    } else if (c === 0x25 /* % */) {
      while (pos < n && data[pos] !== 10 && data[pos] !== 13) pos++;
    } else if (c === 0x3c /* < */) {
      if (data[pos + 1] === 0x3c) {
        opened.push({ kind: '<<', at: stack.length });
        pos += 2;
      } else {
        const end = data.indexOf(0x3e, pos + 1);
        pos = end === -1 ? n : end + 1;
        push(new Uint8Array(0));
      }
    } else if (c === 0x3e /* > */) {
      pos += data[pos + 1] === 0x3e ? 2 : 1;
      const items = close('<<');
      if (!items) continue;
      const dict: Dict = new Map();
      for (let i = 0; i + 1 < items.length; i += 2) {
        const key = items[i];
        if (key instanceof Name) dict.set(key.name, items[i + 1] as Value);
      }
      push(dict);
    } else if (c === 0x5b /* [ */) {
      opened.push({ kind: '[', at: stack.length });
      pos++;
    } else if (c === 0x5d /* ] */) {
      pos++;
      const items = close('[');
      if (items) push(items);
    } else if (c === 0x28 /* ( */) {
      let depth = 1;
      pos++;
      while (pos < n && depth > 0) {
        const d = data[pos++];
        if (d === 0x5c /* \ */) pos++;
        else if (d === 0x28) depth++;
        else if (d === 0x29) depth--;
      }
      push(new Uint8Array(0));
    } else if (c === 0x2f /* / */) {
      let end = pos + 1;
      while (end < n && isRegular(data[end]!)) end++;
      push(new Name(data.toString('latin1', pos + 1, end).replace(/#([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))));
      pos = end;
    } else if (!isRegular(c)) {
      pos++; // a stray delimiter: ) { }
    } else {
      let end = pos + 1;
      while (end < n && isRegular(data[end]!)) end++;
      const word = data.toString('latin1', pos, end);
      pos = end;
      const number = Number(word);
      if (word.length < 32 && /^[+-]?(\d+\.?\d*|\.\d+)$/.test(word) && Number.isFinite(number)) push(number);
      else if (word === 'R') {
        const ref = popNumbers();
        if (ref) push(new Ref(`${ref[0]} ${ref[1]}`));
      } else if (word === 'obj') {
        const id = popNumbers();
        reset();
        objectKey = id ? `${id[0]} ${id[1]}` : null;
      } else if (word === 'endobj') {
        const value = stack[stack.length - 1];
        if (objectKey && (typeof value === 'number' || value instanceof Name || Array.isArray(value))) objects.set(objectKey, value);
        reset();
        objectKey = null;
      } else if (word === 'stream') {
        const dict = stack[stack.length - 1];
        reset();
        objectKey = null;
        if (!(dict instanceof Map)) continue;
        // The data starts after the end of the line (CR LF, LF, or a lone CR).
        while (pos < n && (data[pos] === 0x20 || data[pos] === 0x09)) pos++;
        if (data[pos] === 13) pos++;
        if (data[pos] === 10) pos++;
        const start = pos;
        const length = dict.get('Length');
        let end = -1;
        if (typeof length === 'number' && length >= 0 && start + length <= n) {
          let after = start + length;
          while (after < n && WHITESPACE[data[after]!]) after++;
          if (data.subarray(after, after + ENDSTREAM.length).equals(ENDSTREAM)) end = start + length;
        }
        if (end === -1) {
          const found = data.indexOf(ENDSTREAM, start);
          end = found === -1 ? n : found;
          pos = found === -1 ? n : found + ENDSTREAM.length;
          // The end of line before `endstream` is not data.
          if (end > start && data[end - 1] === 10) end--;
          if (end > start && data[end - 1] === 13) end--;
        } else pos = end;
        streams.push({ start, end, dict });
      } else if (word === 'true' || word === 'false') push(word === 'true');
      else if (word === 'null') push(null);
      else if (opened.length === 0) stack.length = 0; // another keyword (xref, trailer, startxref, n, f): a new start
    }
  }
  return { streams, objects };
}

const resolve = (v: Value | undefined, objects: Map<string, Value>): Value | undefined => (v instanceof Ref ? objects.get(v.key) : v);
const nameOf = (v: Value | undefined): string | null => (v instanceof Name ? v.name : null);

/** Over the budget: stop. */
class Over extends Error {}

/** Output of a decoder, counted against the budget left as it grows. */
class Sink {
  readonly #parts: Buffer[] = [];
  #part = Buffer.allocUnsafe(64 * 1024);
  #used = 0;
  #total = 0;
  constructor(readonly limit: number) {}
  push(byte: number): void {
    if (++this.#total > this.limit) throw new Over();
    if (this.#used === this.#part.length) {
      this.#parts.push(this.#part);
      this.#part = Buffer.allocUnsafe(this.#part.length * 2);
      this.#used = 0;
    }
    this.#part[this.#used++] = byte;
  }
  result(): Buffer {
    return Buffer.concat([...this.#parts, this.#part.subarray(0, this.#used)]);
  }
}

function inflateCounted(input: Uint8Array, limit: number): Promise<Buffer> | Buffer {
  try {
    return inflateSync(input, { maxOutputLength: Math.max(1, limit), finishFlush: zlibConstants.Z_SYNC_FLUSH });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new Over();
    // Corrupt data: a reader decodes up to the fault; so does this count.
    return new Promise((resolveOut, reject) => {
      const parts: Buffer[] = [];
      let total = 0;
      const inflate = createInflate({ finishFlush: zlibConstants.Z_SYNC_FLUSH });
      inflate.on('data', (b: Buffer) => {
        total += b.length;
        if (total > limit) {
          inflate.destroy();
          reject(new Over());
        } else parts.push(b);
      });
      inflate.on('error', () => resolveOut(Buffer.concat(parts)));
      inflate.on('end', () => resolveOut(Buffer.concat(parts)));
      inflate.end(input);
    });
  }
}

function asciiHex(input: Uint8Array, sink: Sink): void {
  let high = -1;
  for (const c of input) {
    if (c === 0x3e) break;
    const v = c >= 0x30 && c <= 0x39 ? c - 0x30 : (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66 ? (c | 0x20) - 0x57 : -1;
    if (v < 0) continue;
    if (high < 0) high = v;
    else {
      sink.push(high * 16 + v);
      high = -1;
    }
  }
  if (high >= 0) sink.push(high * 16);
}

function ascii85(input: Uint8Array, sink: Sink): void {
  const group: number[] = [];
  const flush = (count: number) => {
    let v = 0;
    for (let i = 0; i < 5; i++) v = v * 85 + (group[i] ?? 84);
    for (let i = 0; i < count - 1; i++) sink.push((v >>> (24 - 8 * i)) & 0xff);
  };
  for (const c of input) {
    if (c === 0x7e /* ~ */) break;
    if (c === 0x7a /* z */ && group.length === 0) {
      for (let i = 0; i < 4; i++) sink.push(0);
    } else if (c >= 0x21 && c <= 0x75) {
      group.push(c - 0x21);
      if (group.length === 5) {
        flush(5);
        group.length = 0;
      }
    }
  }
  if (group.length > 1) flush(group.length);
}

function runLength(input: Uint8Array, sink: Sink): void {
  for (let i = 0; i < input.length; ) {
    const len = input[i++]!;
    if (len === 128) break;
    if (len < 128) for (let k = 0; k <= len && i < input.length; k++) sink.push(input[i++]!);
    else {
      const b = input[i++] ?? 0;
      for (let k = 0; k < 257 - len; k++) sink.push(b);
    }
  }
}

function lzw(input: Uint8Array, sink: Sink, earlyChange: number): void {
  // Each table entry as (prefix entry, last byte, length); strings are written out backwards.
  const prefix = new Int32Array(4096);
  const last = new Uint8Array(4096);
  const length = new Uint16Array(4096);
  const scratch = new Uint8Array(4096);
  let next = 258;
  let width = 9;
  let previous = -1;
  let bits = 0;
  let buffer = 0;
  const first = (code: number) => {
    while (code >= 256) code = prefix[code]!;
    return code;
  };
  const write = (code: number) => {
    const len = code < 256 ? 1 : length[code]!;
    for (let i = len - 1, c = code; i >= 0; i--) {
      scratch[i] = c < 256 ? c : last[c]!;
      c = c < 256 ? c : prefix[c]!;
    }
    for (let i = 0; i < len; i++) sink.push(scratch[i]!);
  };
  for (const byte of input) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= width) {
      const code = (buffer >>> (bits - width)) & ((1 << width) - 1);
      bits -= width;
      if (code === 256) {
        next = 258;
        width = 9;
        previous = -1;
        continue;
      }
      if (code === 257) return;
      if (previous >= 0 && next < 4096) {
        prefix[next] = previous;
        last[next] = code < next ? first(code) : first(previous);
        length[next] = (previous < 256 ? 1 : length[previous]!) + 1;
        next++;
      }
      if (code >= next) return; // not a code yet: corrupt
      write(code);
      previous = code;
      if (next + earlyChange >= 1 << width && width < 12) width++;
    }
  }
}

type Decoder = (input: Uint8Array, limit: number, parameter: (key: string) => Value | undefined) => Buffer | Promise<Buffer>;

const counted = (decode: (input: Uint8Array, sink: Sink, parameter: (key: string) => Value | undefined) => void): Decoder => (input, limit, parameter) => {
  const sink = new Sink(limit);
  decode(input, sink, parameter);
  return sink.result();
};

/** The filters that change a stream's size, by their names and abbreviations; each stops past its limit (Over). */
const DECODERS = new Map<string, Decoder>([
  ['FlateDecode', (input, limit) => inflateCounted(input, limit)],
  ['ASCIIHexDecode', counted(asciiHex)],
  ['ASCII85Decode', counted(ascii85)],
  ['RunLengthDecode', counted(runLength)],
  ['LZWDecode', counted((input, sink, parameter) => lzw(input, sink, parameter('EarlyChange') === 0 ? 0 : 1))],
]);
for (const [short, long] of [['Fl', 'FlateDecode'], ['AHx', 'ASCIIHexDecode'], ['A85', 'ASCII85Decode'], ['RL', 'RunLengthDecode'], ['LZW', 'LZWDecode']]) DECODERS.set(short!, DECODERS.get(long!)!);

/**
 * Counts what the PDF's streams expand to against `budgetBytes` (throws PdfTooLarge past
 * it) and blanks, in `data` itself, the streams that reading text never decodes.
 */
export async function defusePdf(data: Buffer, budgetBytes: number): Promise<{ expandedBytes: number }> {
  const { streams, objects } = findStreams(data);
  let total = 0;
  for (const s of streams) {
    const named = s.dict.get('Filter') ?? s.dict.get('F');
    const filter = resolve(named, objects);
    // No filter, one, or several; an entry that is no name (or a reference to nothing) is null.
    const filters = named === undefined || named === null ? [] : (Array.isArray(filter) ? filter : [filter]).map((f) => nameOf(resolve(f, objects)));
    const type = nameOf(resolve(s.dict.get('Type'), objects));
    const subtype = nameOf(resolve(s.dict.get('Subtype'), objects));
    if (subtype === 'Image' || type === 'EmbeddedFile' || filters.some((f) => f !== null && IMAGE_CODECS.has(f))) {
      data.fill(0, s.start, s.end);
      continue;
    }
    // Conservative: what a stream expands to is not known, so it is not read.
    if (filters.includes(null)) throw new PdfTooLarge(budgetBytes, 'the PDF has a stream whose filters cannot be read (an invalid or unresolvable /Filter)');
    const params = resolve(s.dict.get('DecodeParms') ?? s.dict.get('DP'), objects);
    let input: Uint8Array = data.subarray(s.start, s.end);
    for (const [i, name] of filters.entries()) {
      const named = Array.isArray(params) ? params[i] : params;
      const parm = resolve(named, objects);
      const decode = DECODERS.get(name!);
      // A filter PDF.js passes the data through (Crypt, unknown names) adds nothing.
      if (!decode) continue;
      let out: Uint8Array;
      try {
        out = await decode(input, budgetBytes - total, parm instanceof Map ? (key) => resolve(parm.get(key), objects) : () => undefined);
      } catch (err) {
        if (err instanceof Over) throw new PdfTooLarge(budgetBytes);
        throw err;
      }
      total += out.length;
      // A predictor (PNG, TIFF) is one more buffer of about the same size; parameters that cannot be read may name one.
      const predictor = parm instanceof Map ? resolve(parm.get('Predictor'), objects) : named instanceof Ref ? 2 : undefined;
      if (typeof predictor === 'number' && predictor > 1) total += out.length;
      if (total > budgetBytes) throw new PdfTooLarge(budgetBytes);
      input = out;
    }
  }
  return { expandedBytes: total };
}
