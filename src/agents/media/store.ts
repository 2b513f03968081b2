/**
 * The media folder of the history: every file people send, stored once by the SHA-256 of
 * its bytes, under `<history>/media/`. The history folder is hidden from the agent's file
 * tools and its sandbox, so the agent reads these files only as the blocks of a request.
 *
 *   <sha256>                   the bytes (the original, and the image prepared for the model)
 *   <sha256>.transcript.txt    the transcription of a voice note or an audio file
 *   sources/<sha256 of source> the SHA-256 of what a platform's file id downloaded to
 *
 * Each file is written to a temporary name and renamed, so a crash never leaves half a
 * file, and a job resumed after a crash finds what it downloaded or transcribed before.
 * A download is written and hashed chunk by chunk as it arrives ({@link MediaStore.putChunks}),
 * so a 20 MB file never sits whole in memory.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { MediaRef } from "../../ports/index.js";

/** A stored file, as {@link MediaStore.put} returns it. */
export type StoredMedia = Pick<MediaRef, "sha256" | "bytes">;

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
