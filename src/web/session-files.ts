/**
 * The files of web chats and session pages: uploads in the chat box become the files of
 * the person's turn (stored content-addressed in the media folder before the job is
 * queued, then read by the job like a Telegram photo: agents/media/intake.ts), and the
 * files of a session (its images and PDFs, and what `send_file` sent into its web chat)
 * are served to the owner at `/sessions/<id>/files/<sha256>`.
 *
 * Serving is safe by construction: the name in the URL must be a SHA-256 that a block or
 * a sent file of that very session references (nothing else is looked up, so no path can
 * be reached); only raster images (JPEG, PNG, GIF, WebP) are shown inline, every other
 * type (PDF, HTML, SVG, anything) is sent as an attachment, and `nosniff` (the endpoint's
 * headers) stops a browser from guessing another type.
 */
import { MAX_FILE_BYTES } from "../agents/media/intake.js";
import { type MediaStore, uploadSource } from "../agents/media/store.js";
import type { ChatAttachment, ChatAttachmentKind, HistoryStore } from "../ports/index.js";

/** Largest web chat upload (the message and its files together): the intake's file limit. */
export const MAX_UPLOAD_BYTES = MAX_FILE_BYTES;

/** The answer to an upload over {@link MAX_UPLOAD_BYTES}. */
export const UPLOAD_TOO_LARGE = `413 too large: a web chat message with its files takes at most ${MAX_UPLOAD_BYTES} bytes (${MAX_UPLOAD_BYTES / 1024 / 1024} MiB); send a smaller file (compress or split it)\n`;

/** The form field of the chat box's files. */
export const FILE_FIELD = "file";

/** Images a browser may show inline from here; any other type is served as an attachment. */
const INLINE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

/** Whether a file of `mediaType` is shown in the page (a raster image), not downloaded. */
export function showsInline(mediaType: string): boolean {
  return INLINE_TYPES.has(mediaType);
}

/** A file a session references, as it is served. */
export interface SessionFile {
  sha256: string;
  name: string;
  mediaType: string;
  bytes: number;
}

/** The files of an upload, checked; or why they are refused. */
export type Uploads = { files: File[] } | { problem: string };

/**
 * The files a chat box sent in {@link FILE_FIELD}: a file input left empty (a part with no
 * name and no bytes) is no file; a named file with no bytes is refused.
 */
export function uploadsOf(form: Record<string, unknown>): Uploads {
  const field = form[FILE_FIELD];
  const parts = (Array.isArray(field) ? field : [field]).filter(
    (part): part is File => part instanceof File && !(part.name === "" && part.size === 0),
  );
  const empty = parts.find((file) => file.size === 0);
  if (empty) return { problem: `"${empty.name}" is empty (0 bytes); choose a file with content` };
  return { files: parts };
}

/**
 * Stores each uploaded file in the media folder and returns the attachments of the job:
 * their source names the stored bytes, so the job reads them without a download.
 */
export async function storeUploads(store: MediaStore, files: File[]): Promise<ChatAttachment[]> {
  const attachments: ChatAttachment[] = [];
  for (const file of files) {
    const stored = await store.put(new Uint8Array(await file.arrayBuffer()));
    const source = uploadSource(stored.sha256);
    await store.rememberDownload(source, stored.sha256);
    const mimeType = file.type === "" ? "application/octet-stream" : file.type;
    attachments.push({
      kind: attachmentKind(mimeType),
      source,
      name: file.name,
      mimeType,
      size: stored.bytes,
    });
  }
  return attachments;
}

/** What an uploaded file is, by its media type: an image, an audio file, or a document. */
function attachmentKind(mimeType: string): ChatAttachmentKind {
  if (mimeType.startsWith("image/")) return "image";
  if (mimeType.startsWith("audio/")) return "audio";
  return "document";
}

/** Every file session `sessionId` references: its messages' images and PDFs, and sent files. */
export async function sessionFiles(
  history: Pick<HistoryStore, "messages">,
  store: MediaStore,
  sessionId: string,
): Promise<Map<string, SessionFile>> {
  const files = new Map<string, SessionFile>();
  for (const message of await history.messages(sessionId)) {
    for (const block of message.content) {
      if (block.type !== "image" && block.type !== "document") continue;
      const { sha256, name, bytes } = block.media;
      if (!files.has(sha256))
        files.set(sha256, { sha256, name, bytes, mediaType: block.mediaType });
    }
  }
  for (const sent of await store.sentFiles(sessionId)) {
    const { sha256, name, bytes, mediaType } = sent;
    if (!files.has(sha256)) files.set(sha256, { sha256, name, bytes, mediaType });
  }
  return files;
}

/** The headers a session file is served with: its type, and an attachment unless a raster image. */
export function fileHeaders(file: SessionFile): Record<string, string> {
  const inline = showsInline(file.mediaType);
  return {
    "content-type": file.mediaType,
    "content-disposition": `${inline ? "inline" : "attachment"}; ${filenameParameters(file.name)}`,
    // The bytes under a digest never change; only the owner may see them.
    "cache-control": "private, max-age=31536000, immutable",
  };
}

/** `filename="…"; filename*=UTF-8''…`: the name for every browser, no quote or line break in it. */
function filenameParameters(name: string): string {
  const plain = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `filename="${plain}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
