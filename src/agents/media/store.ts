/**
 * The media folder of the history: every file people send, stored once by the SHA-256 of
 * its bytes, under `<history>/media/`. The history folder is hidden from the agent's file
 * tools and its sandbox, so the agent reads these files only as the blocks of a request.
 *
 *   <sha256>                   the bytes (the original, and the image prepared for the model)
 *   <sha256>.transcript.txt    the transcription of a voice note or an audio file
 *   <sha256>.transcription.json the job that had it transcribed (paid for it), and the
 *                              seconds of audio, written before the transcript
 *   sources/<sha256 of source> the SHA-256 of what a platform's file id downloaded to
 *                              (a web chat's upload: `upload:<sha256>`, see {@link uploadSource})
 *   sent/<sha256 of session>/<sha256 of call>.json
 *                              a file `send_file` sent into a web chat (see {@link SentFile})
 *
 * Each file is written to a temporary name and renamed, so a crash never leaves half a
 * file, and a job resumed after a crash finds what it downloaded or transcribed before.
 * A download is written and hashed chunk by chunk as it arrives ({@link MediaStore.putChunks}),
 * so a 20 MB file never sits whole in memory.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { MediaRef } from "../../ports/index.js";

/** The job that had an audio file transcribed, and how many seconds it was (when known). */
export interface TranscriptionRecord {
  jobId: string;
  seconds?: number;
}

/** A stored file, as {@link MediaStore.put} returns it. */
export type StoredMedia = Pick<MediaRef, "sha256" | "bytes">;

/**
 * A file `send_file` sent into a web chat: its bytes stored like any media file, shown in
 * the chat as a link (only to the owner, only in its session).
 */
export interface SentFile {
  sha256: string;
  bytes: number;
  /** The file name the chat shows, without folders. */
  name: string;
  /** Its media type, by its extension (`send_file`'s table). */
  mediaType: string;
  caption?: string;
  /** The `send_file` call that sent it (its tool_use id), or a digest of the file. */
  callId: string;
}

/** What a sent file's record holds (see {@link SentFile}). */
const sentFileSchema: z.ZodType<SentFile> = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().nonnegative(),
  name: z.string().min(1),
  mediaType: z.string().min(1),
  caption: z.string().optional(),
  callId: z.string().min(1),
});

/** The source a web chat's upload is remembered by: the upload is stored before its job runs. */
export function uploadSource(sha256: string): string {
  return `upload:${checkedHash(sha256)}`;
}

/** Thrown by {@link MediaStore.putChunks} when the file goes over its limit; nothing is kept. */
export class MediaTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`over the limit of ${limit} bytes`);
  }
}

/** The content-addressed files of one history folder. */
export class MediaStore {
  readonly #folder: string;

  constructor(historyPath: string) {
    this.#folder = join(historyPath, "media");
  }

  /** Stores `bytes` under their SHA-256 (once: the same bytes again write nothing new). */
  put(bytes: Uint8Array): Promise<StoredMedia> {
    return this.putChunks([bytes], Number.POSITIVE_INFINITY);
  }

  /**
   * Stores a file that arrives in chunks (a download) under its SHA-256, writing and
   * hashing each chunk as it comes, so only one chunk is in memory at a time.
   * @throws MediaTooLarge past `maxBytes` (the partial file is removed); whatever reading
   * `chunks` throws, as it is.
   */
  async putChunks(
    chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    maxBytes: number,
  ): Promise<StoredMedia> {
    await mkdir(this.#folder, { recursive: true });
    const partial = join(this.#folder, `${randomUUID()}.partial`);
    const hash = createHash("sha256");
    let bytes = 0;
    const file = await open(partial, "w");
    try {
      for await (const chunk of chunks) {
        bytes += chunk.byteLength;
        if (bytes > maxBytes) throw new MediaTooLarge(maxBytes);
        hash.update(chunk);
        await file.write(chunk);
      }
      await file.close();
    } catch (error) {
      await file.close().catch(() => undefined);
      await rm(partial, { force: true });
      throw error;
    }
    const sha256 = hash.digest("hex");
    await rename(partial, join(this.#folder, sha256));
    return { sha256, bytes };
  }

  /** The bytes stored under `sha256`. */
  read(sha256: string): Promise<Buffer> {
    return readFile(this.path(sha256));
  }

  /** Where the file `sha256` is, for a reader that takes a path (sharp reads it in strips). */
  path(sha256: string): string {
    return join(this.#folder, checkedHash(sha256));
  }

  /** The size of the stored file `sha256`. */
  async stored(sha256: string): Promise<StoredMedia> {
    return { sha256, bytes: (await stat(this.path(sha256))).size };
  }

  /** What a platform's file id downloaded to before, or null. */
  async downloaded(source: string): Promise<string | null> {
    return this.#readText(join("sources", sourceName(source)));
  }

  /** Remembers that `source` downloaded to the file `sha256`. */
  async rememberDownload(source: string, sha256: string): Promise<void> {
    await this.#write(join("sources", sourceName(source)), sha256);
  }

  /** The transcription of the audio file `sha256`, when one was made. */
  transcript(sha256: string): Promise<string | null> {
    return this.#readText(`${checkedHash(sha256)}.transcript.txt`);
  }

  async rememberTranscript(sha256: string, text: string): Promise<void> {
    await this.#write(`${checkedHash(sha256)}.transcript.txt`, text);
  }

  /** Remembers a file sent into the web chat of session `sessionId` (once per call). */
  async rememberSent(sessionId: string, file: SentFile): Promise<void> {
    const name = join("sent", sourceName(sessionId), `${sourceName(file.callId)}.json`);
    await this.#write(name, JSON.stringify(file));
  }

  /** The files sent into the web chat of session `sessionId` (in no set order). */
  async sentFiles(sessionId: string): Promise<SentFile[]> {
    const folder = join(this.#folder, "sent", sourceName(sessionId));
    let names: string[];
    try {
      names = (await readdir(folder)).filter((name) => name.endsWith(".json"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const texts = await Promise.all(names.map((name) => readFile(join(folder, name), "utf8")));
    return texts.map((text) => sentFileSchema.parse(JSON.parse(text)));
  }

  /** Who had the audio file `sha256` transcribed, when it was; null before, or unreadable. */
  async transcription(sha256: string): Promise<TranscriptionRecord | null> {
    const text = await this.#readText(`${checkedHash(sha256)}.transcription.json`);
    if (text === null) return null;
    try {
      const parsed = JSON.parse(text) as Partial<TranscriptionRecord>;
      if (typeof parsed.jobId !== "string") return null;
      const { seconds } = parsed;
      return { jobId: parsed.jobId, ...(typeof seconds === "number" ? { seconds } : {}) };
    } catch {
      return null;
    }
  }

  /** Remembers who had the audio file `sha256` transcribed (before its transcript). */
  async rememberTranscription(sha256: string, record: TranscriptionRecord): Promise<void> {
    await this.#write(`${checkedHash(sha256)}.transcription.json`, JSON.stringify(record));
  }

  async #readText(name: string): Promise<string | null> {
    try {
      return await readFile(join(this.#folder, name), "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  async #write(name: string, content: Uint8Array | string): Promise<void> {
    const target = join(this.#folder, name);
    await mkdir(join(target, ".."), { recursive: true });
    const partial = `${target}.${randomUUID()}.partial`;
    await writeFile(partial, content);
    await rename(partial, target);
  }
}

/** The name a source is remembered by: never the source itself (a URL, an id). */
function sourceName(source: string): string {
  return createHash("sha256").update(source).digest("hex");
}

/** A SHA-256 in hex; anything else (a path) is refused before it reaches the file system. */
function checkedHash(sha256: string): string {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a stored file's name: ${sha256}`);
  return sha256;
}
