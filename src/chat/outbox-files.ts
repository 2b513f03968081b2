/**
 * The files of the outbox's file entries (`send_file`, spoken replies): each file's bytes
 * are copied under the history folder, content-addressed (`<history>/outbox-files/<sha256>`,
 * one copy per content), before its entry is stored; the entry's text describes the file
 * (name, media type, kind, caption, digest). A retry after a crash or an outage sends the
 * same bytes, even when the workspace file changed or was deleted meanwhile.
 *
 * Copies are written to a temporary name, flushed, then renamed: a copy under its digest
 * is always whole. Copies are kept (retention does not remove them yet).
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename, stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ChatPlatformError, toError } from "../base/errors.js";
import type { OutgoingFile } from "../ports/index.js";

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

  /** `historyPath`: the absolute `history.path`. */
  constructor(historyPath: string) {
    this.folder = join(historyPath, OUTBOX_FILES_FOLDER);
  }

  /** Copies the file's bytes (unless a copy of them exists) and returns the entry's text. */
  async store(file: OutgoingFile): Promise<string> {
    const sha256 = createHash("sha256").update(file.content).digest("hex");
    const target = join(this.folder, sha256);
    if (!(await exists(target))) await this.#write(target, file.content);
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

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
