/**
 * templates/picklebot.yaml, what `picklebot init` writes: a person uncomments a block to
 * use it, so every commented block, uncommented alone and all of them at once, must load
 * with the real config loader; and the file must name every key of the schema.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { POLICY_TOOLS } from "../../src/agents/approval-policy.js";
import { loadConfig } from "../../src/config/index.js";
import { configKeyPaths } from "../helpers/config-keys.js";

const TEMPLATE = fs.readFileSync(
  new URL("../../templates/picklebot.yaml", import.meta.url),
  "utf8",
);

/** What the template's `${NAME}`s name, as a person would set them in .env. */
const ENV = {
  ANTHROPIC_API_KEY: "sk-ant-test",
  TELEGRAM_BOT_TOKEN: "123456789:AAE-test",
  DISCORD_BOT_TOKEN: "MTAx-test",
  SLACK_BOT_TOKEN: "xoxb-test",
  SLACK_APP_TOKEN: "xapp-test",
  PICKLEBOT_HTTP_TOKEN: "a-token-of-sixteen-or-more",
  GITHUB_TOKEN: "ghp_test",
  OPENAI_API_KEY: "sk-test",
  FILES_TOKEN: "files-test",
  BRAVE_API_KEY: "brave-test",
};

/** Keys the template names only in its prose, with the reason. */
const PROSE_ONLY: Record<string, string> = {
  "cluster.job_retention_h": "the old name of queue.job_retention_h, still read",
};

/** A commented line: its indentation and what follows `# `. */
const COMMENTED = /^(\s*)# (.*)$/;
/** The first line of a commented-out block: a lowercase key, then a value or nothing. */
const KEY_LINE = /^[a-z_][a-z0-9_]*:(\s|$)/;

/** A commented-out block: lines [start, end) of the template. */
interface Block {
  start: number;
  end: number;
}

/**
 * The commented-out YAML of the template: a run of commented lines at one indentation
 * that starts with `key:` and goes on with lines indented further (or more keys, or list
 * items). Prose comments never start with a lowercase `key:`.
 */
function commentedBlocks(lines: string[]): Block[] {
  const blocks: Block[] = [];
  let index = 0;
  while (index < lines.length) {
    const first = COMMENTED.exec(lines[index] ?? "");
    if (!first || !KEY_LINE.test(first[2] ?? "")) {
      index++;
      continue;
    }
    const indent = first[1] ?? "";
    let end = index + 1;
    for (; end < lines.length; end++) {
      const next = COMMENTED.exec(lines[end] ?? "");
      if (!next || next[1] !== indent) break;
      const content = next[2] ?? "";
      if (!(content.startsWith(" ") || KEY_LINE.test(content) || content.startsWith("- "))) break;
    }
    blocks.push({ start: index, end });
    index = end;
  }
  return blocks;
}

/** The template with these blocks uncommented (`# ` removed after the indentation). */
function uncomment(blocks: Block[]): string {
  const lines = TEMPLATE.split("\n");
  for (const { start, end } of blocks) {
    for (let line = start; line < end; line++) {
      lines[line] = (lines[line] ?? "").replace(COMMENTED, "$1$2");
    }
  }
  return lines.join("\n");
}

/** Every key path of a parsed YAML value, lists as `[i]`. */
function keyPaths(value: unknown, prefix = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((item) => keyPaths(item, `${prefix}[i]`));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return [path, ...keyPaths(inner, path)];
  });
}

/** A schema path (`mcp_servers.<name>.url`) as a pattern over concrete paths. */
function pathPattern(schemaPath: string): RegExp {
  const escaped = schemaPath.replace(/[.[\]]/g, (c) => `\\${c}`).replace(/<name>/g, "[^.]+");
  return new RegExp(`^${escaped}$`);
}

let workspace: string;

beforeEach(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "picklebot-template-"));
  fs.mkdirSync(path.join(workspace, "agents"));
});

afterEach(() => {
  fs.rmSync(workspace, { recursive: true, force: true });
});

/** Loads `text` as the workspace's picklebot.yaml, as `picklebot server` does. */
function load(text: string) {
  fs.writeFileSync(path.join(workspace, "picklebot.yaml"), text);
  return loadConfig(workspace, ENV, { agentIds: ["pickle"], tools: POLICY_TOOLS });
}

const blocks = commentedBlocks(TEMPLATE.split("\n"));

describe("templates/picklebot.yaml", () => {
  it("loads as written, with the defaults it shows", () => {
    const config = load(TEMPLATE);
    expect(config.default_agent).toBe("pickle");
    expect(config.http.port).toBe(8787);
    expect(config.mcp_servers).toEqual({});
  });

  it("has the commented-out blocks a person would uncomment", () => {
    const firstLines = blocks.map(({ start }) => TEMPLATE.split("\n")[start]?.trim());
    for (const key of ["timezone:", "bindings:", "approvals:", "budget:", "mcp_servers:"]) {
      expect(firstLines.some((line) => line?.startsWith(`# ${key}`))).toBe(true);
    }
    expect(blocks.length).toBeGreaterThanOrEqual(15);
  });

  it.each(blocks.map((block) => [TEMPLATE.split("\n")[block.start]?.trim() ?? "", block] as const))(
    "still loads with %s uncommented",
    (_first, block) => {
      const text = uncomment([block]);
      // The block is YAML that changes the file, not prose taken for it.
      expect(keyPaths(parse(text)).length).toBeGreaterThan(keyPaths(parse(TEMPLATE)).length);
      expect(() => load(text)).not.toThrow();
    },
  );

  it("still loads with every block uncommented at once, and then names every key", () => {
    const text = uncomment(blocks);
    expect(() => load(text)).not.toThrow();
    const named = keyPaths(parse(text));
    const missing = configKeyPaths().filter(
      (key) => !(key in PROSE_ONLY) && !named.some((path) => pathPattern(key).test(path)),
    );
    expect(missing).toEqual([]);
    for (const key of Object.keys(PROSE_ONLY)) expect(TEMPLATE).toContain(key);
  });

  it("says approvals ask, and cites only docs that exist", () => {
    expect(TEMPLATE).not.toMatch(/does not ask|not ask before tool calls yet/);
    const cited = TEMPLATE.match(/docs\/[\w/.-]+\.md/g) ?? [];
    expect(cited.length).toBeGreaterThan(0);
    for (const file of cited) {
      expect(fs.existsSync(new URL(`../../${file}`, import.meta.url)), file).toBe(true);
    }
  });
});
