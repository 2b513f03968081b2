/**
 * The files of the outbox's file entries (`send_file`, spoken replies): each file's bytes
 * are copied under the history folder, content-addressed (`<history>/outbox-files/<sha256>`,
 * one copy per content), before its entry is stored; the entry's text describes the file
 * (name, media type, kind, caption, digest). A retry after a crash or an outage sends the
 * same bytes, even when the workspace file changed or was deleted meanwhile.
 *
 * Copies are written to a temporary name, flushed, then renamed: a copy under its digest
 * is always whole. Retention removes a copy once no entry of the outbox describes it any
 * more (the delivered entries that did were pruned) and it was last stored before the
 * retention's cutoff. A copy's mtime is when it was last stored, on the server's clock:
 * storing the same bytes again dates it anew, so a copy an entry is being made for is
 * not taken away in between.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { systemClock } from "../base/clock.js";
import { ChatPlatformError, toError } from "../base/errors.js";
import type { Clock, OutgoingFile } from "../ports/index.js";

/** The folder of the copies, below `history.path`. */
export const OUTBOX_FILES_FOLDER = "outbox-files";

const DIGEST = /^[0-9a-f]{64}$/;

/** What a file entry's text says: the file without its bytes, and their digest. */
const storedFileSchema = z.object({
  sha256: z.string().regex(DIGEST),
  kind: z.enum(["photo", "document", "voice"]),
  name: z.string().min(1),
  mediaType: z.string().min(1),
  caption: z.string().optional(),
});

/** A file entry's description, see {@link storedFileSchema}. */
export type StoredFile = z.infer<typeof storedFileSchema>;

/** The copies of one history folder. */
export class OutboxFiles {
  /** Absolute folder of the copies. */
  readonly folder: string;

  readonly #clock: Clock;

  /** `historyPath`: the absolute `history.path`; `clock` dates the copies. */
  constructor(historyPath: string, clock: Clock = systemClock) {
    this.folder = join(historyPath, OUTBOX_FILES_FOLDER);
    this.#clock = clock;
  }

  /** Copies the file's bytes (unless a copy of them exists) and returns the entry's text. */
  async store(file: OutgoingFile): Promise<string> {
    const sha256 = createHash("sha256").update(file.content).digest("hex");
    const target = join(this.folder, sha256);
    if (!(await exists(target))) await this.#write(target, file.content);
    await this.#date(target);
    const { content: _bytes, ...described } = file;
    return JSON.stringify({ sha256, ...described } satisfies StoredFile);
  }

  /**
   * The file an entry's text describes, with its bytes. A text that is not a description
   * or a copy that is gone throws a {@link ChatPlatformError} that is not retryable: no
   * retry can bring it back, and the entry is kept as failed, saying so.
   */
  async load(text: string): Promise<OutgoingFile & { sha256: string }> {
    const described = parseStoredFile(text);
    try {
      const content = await readFile(join(this.folder, described.sha256));
      return { ...described, content };
    } catch (thrown) {
      throw new ChatPlatformError(
        `the stored copy of "${described.name}" (${join(this.folder, described.sha256)}) cannot be read: ${toError(thrown).message}`,
      );
    }
  }

  /**
   * Deletes the copies no text of `kept` (the file entries still stored) describes, last
   * stored before `cutoff` (epoch ms), and temporary files a crash left that long ago;
   * returns how many it deleted.
   */
  async sweep(kept: readonly string[], cutoff: number): Promise<number> {
    const needed = new Set(kept.flatMap((text) => digestOf(text) ?? []));
    let deleted = 0;
    for (const name of await this.#names()) {
      const stored = DIGEST.test(name);
      if ((stored && needed.has(name)) || (!stored && !name.endsWith(".tmp"))) continue;
      const path = join(this.folder, name);
      // Read last, just before the unlink: a copy stored again meanwhile is kept.
      if (!(await lastStoredBefore(path, cutoff))) continue;
      await unlink(path).catch(() => undefined);
      deleted += 1;
    }
    return deleted;
  }

  /** Dates a copy as stored now, so a sweep under way does not take it. */
  async #date(path: string): Promise<void> {
    const now = new Date(this.#clock.now());
    await utimes(path, now, now);
  }

  async #names(): Promise<string[]> {
    try {
      return await readdir(this.folder);
    } catch (thrown) {
      if ((thrown as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw thrown;
    }
  }

  async #write(target: string, content: Buffer): Promise<void> {
    await mkdir(this.folder, { recursive: true, mode: 0o700 });
    const temporary = `${target}.${randomUUID()}.tmp`;
    const handle = await open(temporary, "wx", 0o600);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
  }
}

/** The description in a file entry's text; throws a non-retryable error for anything else. */
export function parseStoredFile(text: string): StoredFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const described = storedFileSchema.safeParse(parsed);
  if (!described.success) {
    throw new ChatPlatformError("a file entry of the outbox does not describe a stored file");
  }
  return described.data;
}

/** The digest a file entry's text names, or null for a text that describes no file. */
function digestOf(text: string): string | null {
  try {
    return parseStoredFile(text).sha256;
  } catch {
    return null;
  }
}

/** Whether the file at `path` was last written before `cutoff`; false when it is gone. */
async function lastStoredBefore(path: string, cutoff: number): Promise<boolean> {
  return stat(path).then(
    (stats) => stats.mtimeMs < cutoff,
    () => false,
  );
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
