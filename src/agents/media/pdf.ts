/**
 * What the model APIs need checked of a PDF before it is sent as a document block: the
 * API refuses a file that is encrypted, damaged, over {@link MAX_PDF_BYTES} or over
 * {@link MAX_PDF_PAGES} pages, and a refused request would fail the whole turn.
 */

import { inflateSync } from "node:zlib";
import { MAX_MEDIA_BYTES_PER_REQUEST } from "../context-builder.js";

/**
 * The largest PDF sent: the Messages API takes 32 MB in a request, and base64 makes a PDF
 * a third larger (the context builder keeps a request's files within the same bytes).
 */
export const MAX_PDF_BYTES = MAX_MEDIA_BYTES_PER_REQUEST;

/** The Messages API's limit of pages in one PDF. */
export const MAX_PDF_PAGES = 100;

/** A PDF as checked: its pages, or why it cannot be sent. */
export type CheckedPdf = { ok: true; pages: number } | { ok: false; reason: string };

/**
 * Checks the PDF's header, end marker, encryption and pages. Pages are counted from the
 * page objects and the page tree's `/Count`, whichever is larger, in the file and in its
 * compressed object streams (where a PDF 1.5 or later keeps them); a PDF whose page tree
 * cannot be found counts as 1 (the API's own check remains).
 */
export function checkPdf(bytes: Uint8Array): CheckedPdf {
  if (bytes.byteLength > MAX_PDF_BYTES) {
    return {
      ok: false,
      reason: `it is over ${MAX_PDF_BYTES / 1024 / 1024} MB, the most the model takes in one request once encoded`,
    };
  }
  const text = Buffer.from(bytes).toString("latin1");
  if (!text.startsWith("%PDF-")) return { ok: false, reason: "it is not a PDF (it looks damaged)" };
  if (!text.slice(-1024).includes("%%EOF"))
    return { ok: false, reason: "it is damaged (cut short)" };
  if (/\/Encrypt\b/.test(text))
    return { ok: false, reason: "it is encrypted (password-protected)" };
  const pages = Math.max(1, pagesIn(text), pagesIn(objectStreamsOf(bytes, text)));
  if (pages > MAX_PDF_PAGES) {
    return { ok: false, reason: `it has ${pages} pages; the model reads at most ${MAX_PDF_PAGES}` };
  }
  return { ok: true, pages };
}

/** Pages in PDF text: its page objects, or its page tree's `/Count`, whichever is larger. */
function pagesIn(text: string): number {
  const objects = text.match(/\/Type\s*\/Page(?![a-zA-Z])/g)?.length ?? 0;
  const counts = [...text.matchAll(/\/Type\s*\/Pages\b[^>]*?\/Count\s+(\d+)/g)].map((m) =>
    Number(m[1]),
  );
  return Math.max(0, objects, ...counts);
}

/** The most a PDF's object streams may inflate to, together: more is not a page tree but a bomb. */
const MAX_OBJECT_STREAM_BYTES = 8 * 1024 * 1024;

/**
 * The objects kept in the PDF's compressed object streams (`/Type /ObjStm`, Flate), as
 * text; a stream that does not inflate, or would pass {@link MAX_OBJECT_STREAM_BYTES}, is
 * left out.
 */
function objectStreamsOf(bytes: Uint8Array, text: string): string {
  const found: string[] = [];
  let room = MAX_OBJECT_STREAM_BYTES;
  for (const match of text.matchAll(/\/Type\s*\/ObjStm\b/g)) {
    if (room <= 0) break;
    const start = text.indexOf("stream", match.index);
    const dictionary = text.slice(match.index, start);
    if (start === -1 || !dictionary.includes("/FlateDecode")) continue;
    const dataStart = start + (text.startsWith("stream\r\n", start) ? 8 : 7);
    const end = text.indexOf("endstream", dataStart);
    if (end === -1) continue;
    try {
      const objects = inflateSync(bytes.subarray(dataStart, end), { maxOutputLength: room });
      room -= objects.byteLength;
      found.push(objects.toString("latin1"));
    } catch {
      // A damaged stream, or one past the cap, hides its pages; the API's own check remains.
    }
  }
  return found.join("\n");
}
