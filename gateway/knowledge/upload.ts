import busboy from 'busboy';
import type { Request } from 'express';
import { AppError } from '../../lib/errors.js';
import { invalidField } from '../http/validate.js';

/**
 * A `multipart/form-data` upload of one document: the `file` part (bounded to `maxBytes`,
 * read into memory) and an optional `title` field. Anything else is a clear 4xx: no file,
 * two files, a file over the limit (413), a malformed body.
 */
export interface Upload {
  filename: string;
  mimeType: string;
  bytes: Buffer;
  title: string | null;
}

/** The form readUpload reads, as a JSON Schema (for the OpenAPI document). */
export const UPLOAD_FORM_SCHEMA = {
  type: 'object',
  required: ['file'],
  properties: {
    file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'One .txt, .md, .html or .pdf file.' },
    title: { type: 'string', maxLength: 500, description: 'The document title (default: the file name).' },
  },
};

export function readUpload(req: Request, maxBytes: number): Promise<Upload> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 1, fileSize: maxBytes, fields: 4, fieldSize: 2000, parts: 6 }, defParamCharset: 'utf8' });
    } catch (err) {
      reject(new AppError('VALIDATION_ERROR', 'The multipart body cannot be read (boundary missing?).', { details: [{ field: '(body)', message: 'must be multipart/form-data with a boundary' }], cause: err }));
      return;
    }
    let file: { filename: string; mimeType: string; chunks: Buffer[]; size: number } | null = null;
    let title: string | null = null;
    let failed: AppError | null = null;
    const fail = (err: AppError) => {
      failed ??= err;
    };
    parser.on('file', (name, stream, info) => {
      if (name !== 'file' || file) {
        fail(name === 'file' ? invalidField('file', 'send one file at a time') : invalidField(name, 'is not a known field (send the document as "file")'));
        stream.resume();
        return;
      }
      const f = { filename: (info.filename ?? '').slice(0, 255), mimeType: info.mimeType, chunks: [] as Buffer[], size: 0 };
      file = f;
      stream.on('data', (c: Buffer) => {
        f.size += c.length;
        if (!failed) f.chunks.push(c);
      });
      stream.on('limit', () => fail(new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${Math.round(maxBytes / 1024 / 1024)} MiB.`)));
    });
    parser.on('field', (name, value, info) => {
      if (name === 'title') {
        if (info.valueTruncated || value.length > 500) fail(invalidField('title', 'must be at most 500 characters'));
        else title = value.trim() || null;
      } else fail(invalidField(name, 'is not a known field'));
    });
    parser.on('filesLimit', () => fail(invalidField('file', 'send one file at a time')));
    parser.on('partsLimit', () => fail(invalidField('(body)', 'has too many parts')));
    parser.on('fieldsLimit', () => fail(invalidField('(body)', 'has too many fields')));
    parser.on('error', (err: Error) => {
      reject(failed ?? new AppError('VALIDATION_ERROR', 'The multipart body is malformed.', { details: [{ field: '(body)', message: 'is not valid multipart/form-data' }], cause: err }));
    });
    parser.on('close', () => {
      const f = file as { filename: string; mimeType: string; chunks: Buffer[]; size: number } | null;
      if (failed) return reject(failed);
      if (!f) return reject(invalidField('file', 'is required'));
      if (f.size === 0) return reject(invalidField('file', 'is empty'));
      resolve({ filename: f.filename, mimeType: f.mimeType, bytes: Buffer.concat(f.chunks, f.size), title });
    });
    req.pipe(parser);
  });
}
