/**
 * Markdown files with YAML front matter (AGENT.md, SKILL.md): a `---` line, the fields,
 * another `---` line, then the markdown body.
 */
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
