/**
 * `send_file` in a web chat: the file's bytes are stored in the media folder
 * (content-addressed, store.ts) and remembered as sent into the chat's session, once per
 * tool call; the session page shows it as a link the owner opens (web/sessions.tsx
 * serves only files stored for that session). Nothing goes through the outbox: the web
 * chat is the session page itself.
 */
import { createHash } from "node:crypto";
import type { FileSender } from "../tools/send-file.js";
import { MAX_FILE_BYTES } from "./intake.js";
import type { MediaStore } from "./store.js";

/** Why the web chat would refuse a file of `bytes` bytes named `name`, or undefined. */
export function webFileProblem(name: string, bytes: number): string | undefined {
  if (bytes === 0) return `"${name}" is empty; the web chat refuses empty files`;
  if (bytes <= MAX_FILE_BYTES) return undefined;
  return `"${name}" is ${bytes} bytes, over the web chat's limit of ${MAX_FILE_BYTES} bytes (${MAX_FILE_BYTES / 1024 / 1024} MiB) per file; send a smaller file (compress or split it)`;
}

/** The {@link FileSender} of a job that answers the web chat of session `sessionId`. */
export function webFileSender(store: MediaStore, sessionId: string): FileSender {
  return {
    refusal: webFileProblem,
    send: async (file, callId) => {
      const stored = await store.put(file.content);
      // Without a call id (never in a job's turn), once per content, name and caption.
      const id =
        callId ??
        createHash("sha256")
          .update(`${stored.sha256}\n${file.name}\n${file.caption ?? ""}`)
          .digest("hex");
      const sent = await store.sentFiles(sessionId);
      if (!sent.some((earlier) => earlier.callId === id)) {
        const { name, mediaType, caption } = file;
        await store.rememberSent(sessionId, {
          ...stored,
          name,
          mediaType,
          ...(caption === undefined ? {} : { caption }),
          callId: id,
        });
      }
      return `sent ${file.name} to the web chat; it shows there as a link`;
    },
  };
}
