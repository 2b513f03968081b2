/**
 * The docs hold together: every relative link of README.md and docs/ leads to a file that
 * exists (and to a heading that exists, when it names one), and so does every source file
 * they name; every file a comment, a template or an example cites as `docs/….md` exists;
 * and the picklebot.yaml reference (docs/reference/config.md) names every schema key.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { configKeyPaths } from "../helpers/config-keys.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Every file under `folder` (relative to the root) whose name ends with one of `ends`. */
function filesUnder(folder: string, ends: string[]): string[] {
  const found: string[] = [];
  const visit = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(relative);
      else if (ends.some((end) => entry.name.endsWith(end))) found.push(relative);
    }
  };
  if (fs.existsSync(path.join(ROOT, folder))) visit(folder);
  return found;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a markdown file's headings (outside code blocks), repeats numbered. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of fs.readFileSync(path.join(ROOT, file), "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1] ?? "");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The relative links of a markdown file, outside code blocks. */
function linksOf(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), "utf8").replace(/^```[\s\S]*?^```/gm, "");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? "")
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target));
}

const MARKDOWN = ["README.md", ...filesUnder("docs", [".md"])];

/** A path of the repository's code in a code span (`src/base/redact.ts`). */
const REPOSITORY_PATH = /`((?:src|test|bench|migrations|deploy|templates)\/[^`\s]*)`/g;

/** A docs page or picture as code cites it (`docs/guides/cost.md`), not a test's made-up path. */
const DOCS_CITATION =
  /\bdocs\/(?:(?:guides|operations|reference|development|decisions)\/[\w.-]+\.md|README\.md|design\.md|[\w.-]+\.png)/g;

describe("the docs", () => {
  it("have a page per area", () => {
    for (const page of [
      "docs/README.md",
      "docs/design.md",
      "docs/reference/cli.md",
      "docs/reference/config.md",
      "docs/development/testing.md",
      "docs/decisions/README.md",
    ]) {
      expect(MARKDOWN, page).toContain(page);
    }
  });

  it.each(MARKDOWN)("%s: every relative link leads to a file and heading that exist", (file) => {
    const broken: string[] = [];
    for (const link of linksOf(file)) {
      const [target = "", anchor] = link.split("#");
      const resolved = target ? path.join(path.dirname(file), target) : file;
      if (!fs.existsSync(path.join(ROOT, resolved))) {
        broken.push(`${link}: no file ${resolved}`);
      } else if (anchor && resolved.endsWith(".md") && !anchorsOf(resolved).has(anchor)) {
        broken.push(`${link}: no heading #${anchor} in ${resolved}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("every docs/ file cited by the code, templates and examples exists", () => {
    const citing = [
      ...filesUnder("src", [".ts", ".tsx"]),
      ...filesUnder("test", [".ts", ".tsx"]),
      ...filesUnder("bench", [".js", ".ts", ".md"]),
      ...filesUnder("templates", [".yaml", ".md"]),
      ...filesUnder("crons", [".yaml"]),
      ...filesUnder("agents", [".md"]),
      ...filesUnder("deploy", [".service", ".js"]),
      ".dependency-cruiser.cjs",
      ".ci/run",
      "Dockerfile",
      "compose.yaml",
    ];
    const missing: string[] = [];
    for (const file of citing) {
      const text = fs.readFileSync(path.join(ROOT, file), "utf8");
      for (const [cited] of text.matchAll(DOCS_CITATION)) {
        if (!fs.existsSync(path.join(ROOT, cited))) missing.push(`${file}: ${cited}`);
      }
      if (/\bDESIGN\.md\b/.test(text) && !text.includes("docs/design.md")) {
        missing.push(`${file}: cites DESIGN.md, which lives at docs/design.md`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("every file of the repository the docs name in code spans exists", () => {
    const missing: string[] = [];
    for (const file of MARKDOWN.filter((page) => page !== "docs/design.md")) {
      const text = fs.readFileSync(path.join(ROOT, file), "utf8");
      for (const [, cited = ""] of text.matchAll(REPOSITORY_PATH)) {
        if (/[*<>]/.test(cited)) continue; // a pattern, not a file
        if (!fs.existsSync(path.join(ROOT, cited))) missing.push(`${file}: ${cited}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("docs/reference/config.md names every key of picklebot.yaml", () => {
    const reference = fs.readFileSync(path.join(ROOT, "docs/reference/config.md"), "utf8");
    const paths = configKeyPaths();
    // A section (a key with keys below it) is named by its heading; its keys must be in rows.
    const leaves = paths.filter((key) => !paths.some((other) => other.startsWith(`${key}.`)));
    const missing = leaves.filter((key) => !reference.includes(`\`${key}\``));
    expect(missing).toEqual([]);
  });
});
