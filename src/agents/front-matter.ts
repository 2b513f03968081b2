/**
 * Markdown files with YAML front matter (AGENT.md, SKILL.md): a `---` line, the fields,
 * another `---` line, then the markdown body.
 */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../base/errors.js";
import { parseYaml } from "../config/load.js";

/** A front-matter file split into its parsed fields and its body. */
export interface FrontMatterFile {
  /** The parsed YAML between the `---` lines (an empty block is `{}`). */
  fields: unknown;
  /** The markdown after the closing `---`, trimmed. */
  body: string;
}

/**
 * Splits and parses `text`; `file` names it in errors and `expected` lists its fields
 * for the error of a file without front matter (e.g. "name, description, optional model").
 *
 * @throws UserError for a missing front matter or a YAML syntax error, with the line.
 */
export function parseFrontMatterFile(
  text: string,
  file: string,
  expected: string,
): FrontMatterFile {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  const closing = lines.findIndex((line, index) => index > 0 && line.trimEnd() === "---");
  if (lines[0]?.trimEnd() !== "---" || closing === -1) {
    throw new UserError(
      `${file}: missing YAML front matter; start the file with a line "---", then the fields ` +
        `(${expected}), then another "---" line.`,
      { context: { file } },
    );
  }
  return {
    fields: parseYaml(lines.slice(1, closing).join("\n"), file, 1) ?? {},
    body: lines
      .slice(closing + 1)
      .join("\n")
      .trim(),
  };
}

/**
 * The text of `<folder>/<fileName>`; `howToAdd` completes the error of a folder without
 * one ("add one (…) or remove the folder").
 *
 * @throws UserError naming the folder or file and the fix.
 */
export function readFolderFile(folder: string, fileName: string, howToAdd: string): string {
  const file = path.join(folder, fileName);
  try {
    return fs.readFileSync(file, "utf8");
  } catch (thrown) {
    const missing = (thrown as NodeJS.ErrnoException).code === "ENOENT";
    throw new UserError(
      missing
        ? `${folder}: no ${fileName}; add one (${howToAdd}) or remove the folder.`
        : `cannot read ${file}: ${(thrown as Error).message}; check its permissions.`,
      { cause: thrown, context: { file } },
    );
  }
}
