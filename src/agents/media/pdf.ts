/**
 * What the model APIs need checked of a PDF before it is sent as a document block: the
 * API refuses a file that is encrypted, damaged, over {@link MAX_PDF_BYTES} or over
 * {@link MAX_PDF_PAGES} pages, and a refused request would fail the whole turn.
 */

/** The Messages API's limit of one request's PDF. */
export const MAX_PDF_BYTES = 32 * 1024 * 1024;

/** The Messages API's limit of pages in one PDF. */
export const MAX_PDF_PAGES = 100;

/** A PDF as checked: its pages, or why it cannot be sent. */
export type CheckedPdf = { ok: true; pages: number } | { ok: false; reason: string };

/**
 * Checks the PDF's header, end marker, encryption and pages. Pages are counted from the
 * page objects and the page tree's `/Count`, whichever is larger; a PDF whose pages sit in
 * compressed object streams shows neither and counts as 1 (the API's own check remains).
 */
export function checkPdf(bytes: Uint8Array): CheckedPdf {
  if (bytes.byteLength > MAX_PDF_BYTES) {
    return {
      ok: false,
      reason: `it is over ${MAX_PDF_BYTES / 1024 / 1024} MB, the model's limit for a PDF`,
    };
  }
  const text = Buffer.from(bytes).toString("latin1");
  if (!text.startsWith("%PDF-")) return { ok: false, reason: "it is not a PDF (it looks damaged)" };
  if (!text.slice(-1024).includes("%%EOF"))
    return { ok: false, reason: "it is damaged (cut short)" };
  if (/\/Encrypt\b/.test(text))
    return { ok: false, reason: "it is encrypted (password-protected)" };
  const objects = text.match(/\/Type\s*\/Page(?![a-zA-Z])/g)?.length ?? 0;
  const counts = [...text.matchAll(/\/Type\s*\/Pages\b[^>]*?\/Count\s+(\d+)/g)].map((m) =>
    Number(m[1]),
  );
  const pages = Math.max(1, objects, ...counts);
  if (pages > MAX_PDF_PAGES) {
    return { ok: false, reason: `it has ${pages} pages; the model reads at most ${MAX_PDF_PAGES}` };
  }
  return { ok: true, pages };
}
