/**
 * How editors and tools save a file, for tests of what watches the workspace: each one
 * leaves `file` holding `text`, by the steps that tool takes.
 */
import { renameSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Saves `text` to `file` the way one editor or tool does. */
export type Save = (file: string, text: string) => void;

/** Every way of saving, by the tool that saves so. */
export const EDITOR_SAVES = {
  /** Overwrites the file where it is (most editors, `>` in a shell). */
  "in-place write": (file, text) => writeFileSync(file, text),
  /** Writes a temp file beside it, then renames it over the file (`sed -i`, rsync). */
  "temp file renamed over it": (file, text) => {
    const temp = join(dirname(file), `.${basename(file)}.tmp`);
    writeFileSync(temp, text);
    renameSync(temp, file);
  },
  /** Renames the file to a backup, writes a new one, deletes the backup (vim). */
  "backup rename": (file, text) => {
    renameSync(file, `${file}~`);
    writeFileSync(file, text);
    unlinkSync(`${file}~`);
  },
  /** Deletes the file and creates it again (`git checkout`, `git pull`). */
  "unlink and create": (file, text) => {
    unlinkSync(file);
    writeFileSync(file, text);
  },
} satisfies Record<string, Save>;
