import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  agentConfigProblem,
  builtInAgent,
  formatLocalTime,
  loadAgents,
  renderSystemPrompt,
  resolveAgent,
} from "../../src/agents/definition.js";
import { DEFAULT_MEMORY } from "../../src/agents/memory/settings.js";
import { DEFAULT_TOOLS } from "../../src/agents/tools/index.js";
import { loadConfig } from "../../src/config/index.js";

let workspace: string;

beforeEach(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "picklebot-agents-"));
});

afterEach(() => {
  fs.rmSync(workspace, { recursive: true, force: true });
});

function writeAgent(id: string, text: string): string {
  const folder = path.join(workspace, "agents", id);
  fs.mkdirSync(folder, { recursive: true });
  const file = path.join(folder, "AGENT.md");
  fs.writeFileSync(file, text);
  return file;
}

function agentText(frontMatter: string, prompt = "You are a test agent."): string {
  return `---\n${frontMatter}\n---\n${prompt}\n`;
}

function onlyError(): string {
  const { errors } = loadAgents(workspace);
  expect(errors).toHaveLength(1);
  return errors[0]?.message ?? "";
}

describe("loadAgents", () => {
  it("refuses a model: within a typo of a named model, and an unknown fallback; a model id is fine", () => {
    const config = loadConfig(workspace, {});
    const withModels = {
      ...config,
      models: { haiku: { model: "claude-haiku-4-5", fallbacks: [] } },
    };
    const file = writeAgent(
      "writer",
      agentText("name: W\ndescription: d\nmodel: haikuu\nfallbacks: [defualt, haiku]"),
    );
    const [agent] = loadAgents(workspace).agents.values();
    expect(agent && agentConfigProblem(agent, withModels)).toBe(
      `${file}: model: "haikuu" is no named model; did you mean "haiku"?; fallbacks: unknown model "defualt" (did you mean "default"?) (named models: default, haiku); name one of those or add it under models: in picklebot.yaml`,
    );
    writeAgent(
      "writer",
      agentText("name: W\ndescription: d\nmodel: claude-opus-4-1\nfallbacks: [haiku]"),
    );
    const [valid] = loadAgents(workspace).agents.values();
    expect(valid && agentConfigProblem(valid, withModels)).toBeNull();
  });

  it("loads a definition with all its fields", () => {
    const file = writeAgent(
      "writer",
      agentText(
        "name: Writer\ndescription: Drafts texts\nmodel: claude-opus-4-1\nmax_tokens: 2048\n" +
          "tools: [read, bash, post_message]",
        "You write.\n\nWell.",
      ),
    );
    const { agents, errors } = loadAgents(workspace);
    expect(errors).toEqual([]);
    expect(agents.get("writer")).toEqual({
      id: "writer",
      name: "Writer",
      description: "Drafts texts",
      model: "claude-opus-4-1",
      maxTokens: 2048,
      tools: ["read", "bash", "post_message"],
      approvals: {},
      memory: DEFAULT_MEMORY,
      prompt: "You write.\n\nWell.",
      source: file,
    });
  });

  it("reads whether the agent's bash may use the network", () => {
    writeAgent("online", agentText("name: Online\ndescription: Fetches\nbash:\n  network: true"));
    writeAgent("plain", agentText("name: Plain\ndescription: Plain agent"));
    const { agents } = loadAgents(workspace);
    expect(agents.get("online")?.bashNetwork).toBe(true);
    expect(agents.get("plain")?.bashNetwork).toBeUndefined();
  });

  it("reads memory: off, on with the default budgets, or with its own", () => {
    writeAgent("off", agentText("name: Off\ndescription: Forgets\nmemory: false"));
    writeAgent("on", agentText("name: On\ndescription: Remembers\nmemory: true"));
    writeAgent("plain", agentText("name: Plain\ndescription: Plain agent"));
    writeAgent(
      "small",
      agentText("name: Small\ndescription: Terse\nmemory: {agent_chars: 500, read_only: true}"),
    );
    const { agents, errors } = loadAgents(workspace);
    expect(errors).toEqual([]);
    expect(agents.get("off")?.memory).toBeNull();
    expect(agents.get("on")?.memory).toEqual(DEFAULT_MEMORY);
    expect(agents.get("plain")?.memory).toEqual(DEFAULT_MEMORY);
    expect(agents.get("small")?.memory).toEqual({
      agentChars: 500,
      personChars: DEFAULT_MEMORY.personChars,
      readOnly: true,
    });
    expect(builtInAgent("pickle").memory).toEqual(DEFAULT_MEMORY);
  });

  it("names a bad memory field and what it takes", () => {
    const file = writeAgent(
      "bad",
      agentText("name: Bad\ndescription: Bad\nmemory: {person_chars: 50, forget: true}"),
    );
    const { errors } = loadAgents(workspace);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toContain(file);
    expect(errors[0]?.message).toMatch(
      /memory\.person_chars: expected a whole number of characters from 100 to 20000, found 50/,
    );
    expect(errors[0]?.message).toContain(
      "memory.forget: unknown key; rename or remove it (known keys under memory: agent_chars, person_chars, read_only)",
    );
  });

  it("gives an agent without a tools field the default tools", () => {
    writeAgent("plain", agentText("name: Plain\ndescription: Plain agent"));
    expect(loadAgents(workspace).agents.get("plain")?.tools).toEqual(DEFAULT_TOOLS);
  });

  it("has no agents when the workspace has no agents folder", () => {
    expect(loadAgents(workspace)).toEqual({ agents: new Map(), errors: [], broken: new Map() });
  });

  it("loads the agent shipped with the repository", () => {
    const repo = path.resolve(import.meta.dirname, "../..");
    const { agents, errors } = loadAgents(repo);
    expect(errors).toEqual([]);
    expect(agents.get("pickle")?.name).toBe("Pickle");
    expect(agents.get("pickle")?.prompt).toContain("{{workspace}}");
  });

  it("reports a file without front matter while the other agents still load", () => {
    writeAgent("good", agentText("name: Good\ndescription: Works"));
    const file = writeAgent("bare", "You are an agent without front matter.\n");
    const { agents, errors } = loadAgents(workspace);
    expect([...agents.keys()]).toEqual(["good"]);
    expect(errors.map((error) => error.message)).toEqual([
      `${file}: missing YAML front matter; start the file with a line "---", then the fields ` +
        '(name, description, optional model, fallbacks, max_tokens, tools, subagents, skills, memory), then another "---" line.',
    ]);
  });

  it("reads the skills an agent gets, and names a bad skill name", () => {
    writeAgent("coder", agentText("name: Coder\ndescription: Codes\nskills: [git-flow, git-flow]"));
    const file = writeAgent("bad", agentText("name: Bad\ndescription: x\nskills: [Git_Flow]"));
    const { agents, errors } = loadAgents(workspace);
    expect(agents.get("coder")?.skills).toEqual(["git-flow"]);
    expect(errors.map((error) => error.message)).toEqual([
      `${file}: skills[0]: expected a skill name: 1 to 64 lowercase letters, digits and hyphens, ` +
        'not starting or ending with a hyphen and without "--" (e.g. pdf-forms), found "Git_Flow"; correct it.',
    ]);
  });

  it("names the field, the unknown tool and the allowed tools", () => {
    const file = writeAgent("bad", agentText("name: Bad\ndescription: x\ntools: [read, bsh]"));
    expect(onlyError()).toBe(
      `${file}: tools: unknown tool "bsh"; did you mean "bash"? (allowed: read, write, edit, ` +
        "bash, web_fetch, web_search, post_message, send_file, subagent, skill, memory, session_search, session_read, schedule, " +
        "or mcp:<server> for an MCP server's tools); " +
        "fix or remove it.",
    );
  });

  it("loads the subagent tool and its subagents list", () => {
    writeAgent(
      "boss",
      agentText(
        "name: Boss\ndescription: x\ntools: [read, subagent]\nsubagents: [researcher, coder]",
      ),
    );
    const { agents, errors } = loadAgents(workspace);
    expect(errors).toEqual([]);
    expect(agents.get("boss")).toMatchObject({
      tools: ["read", "subagent"],
      subagents: ["researcher", "coder"],
    });
  });

  it("refuses a subagents entry that is not an agent id", () => {
    const file = writeAgent(
      "boss",
      agentText("name: Boss\ndescription: x\ntools: [subagent]\nsubagents: [../etc]"),
    );
    expect(onlyError()).toBe(
      `${file}: subagents[0]: expected an agent id (a folder name under agents/), found "../etc"; correct it.`,
    );
  });

  it("rejects a max_tokens that is not a positive whole number", () => {
    const file = writeAgent("bad", agentText("name: Bad\ndescription: x\nmax_tokens: -5"));
    expect(onlyError()).toBe(
      `${file}: max_tokens: expected a whole number of at least 1, found -5; ` +
        "correct it or remove it to use the default.",
    );
  });

  it("reads an agent's budget and rejects one that is not a positive amount", () => {
    writeAgent("thrifty", agentText("name: T\ndescription: x\nbudget: {daily_usd: 1.5}"));
    expect(loadAgents(workspace).agents.get("thrifty")?.budget).toEqual({ daily_usd: 1.5 });
    const file = writeAgent("bad", agentText("name: B\ndescription: x\nbudget: {monthly_usd: 0}"));
    expect(onlyError()).toMatch(
      new RegExp(
        `^${file.replaceAll("/", "\\/")}: budget\\.monthly_usd: expected an amount in US dollars greater than 0`,
      ),
    );
  });

  it("rejects an unknown front-matter key with a suggestion", () => {
    const file = writeAgent("bad", agentText("name: Bad\ndescription: x\nmodle: claude"));
    expect(onlyError()).toContain(`${file}: modle: unknown key; did you mean "model"?`);
  });

  it("reads web_fetch.allow_domains, and names a value that is not a domain", () => {
    writeAgent(
      "researcher",
      agentText("name: R\ndescription: x\nweb_fetch:\n  allow_domains: [wikipedia.org, arxiv.org]"),
    );
    expect(loadAgents(workspace).agents.get("researcher")?.webFetch).toEqual({
      allowDomains: ["wikipedia.org", "arxiv.org"],
    });
    writeAgent(
      "bad",
      agentText("name: B\ndescription: x\nweb_fetch:\n  allow_domains: [http://x.org]"),
    );
    expect(onlyError()).toContain("web_fetch.allow_domains[0]");
  });

  it("names a missing required field", () => {
    const file = writeAgent("bad", agentText("description: x"));
    expect(onlyError()).toBe(`${file}: name: missing (expected text); add it.`);
  });

  it("gives the line in the file of a front-matter syntax error", () => {
    const file = writeAgent("bad", agentText("name: Bad\ndescription: x\ntools: [read"));
    expect(onlyError()).toMatch(new RegExp(`^${file}:[45]: YAML syntax error`));
  });

  it("rejects an empty prompt and a folder name that is not an id", () => {
    const file = writeAgent("empty", agentText("name: E\ndescription: x", ""));
    writeAgent("has space", agentText("name: S\ndescription: x"));
    const messages = loadAgents(workspace).errors.map((error) => error.message);
    expect(messages).toEqual([
      `${file}: the system prompt is empty; write the agent's instructions below the closing ---.`,
      expect.stringContaining('"has space" is not a valid agent id'),
    ]);
  });
});

describe("resolveAgent", () => {
  it("falls back to the built-in agent for the default id", () => {
    const agent = resolveAgent(new Map(), "pickle", "pickle");
    expect(agent).toMatchObject({ id: "pickle", name: "Pickle", source: "built-in" });
    expect(agent.tools).toEqual(DEFAULT_TOOLS);
  });

  it("fails closed: a broken AGENT.md of the default agent is an error, not the built-in", () => {
    const file = writeAgent("pickle", agentText("name: Narrow\ntools: [read]"));
    const { agents, broken } = loadAgents(workspace);
    expect([...broken.keys()]).toEqual(["pickle"]);
    expect(() => resolveAgent(agents, "pickle", "pickle", broken)).toThrow(
      `agent "pickle" is broken and does not run until its definition is fixed: ${file}: description: missing`,
    );
  });

  it("prefers a defined agent over the built-in one", () => {
    writeAgent("pickle", agentText("name: My Pickle\ndescription: mine"));
    const { agents } = loadAgents(workspace);
    expect(resolveAgent(agents, "pickle", "pickle").name).toBe("My Pickle");
  });

  it("names an unknown agent and the known ones", () => {
    writeAgent("writer", agentText("name: Writer\ndescription: x"));
    const { agents } = loadAgents(workspace);
    expect(() => resolveAgent(agents, "writr", "pickle")).toThrow(
      'unknown agent "writr"; did you mean "writer"? (known: pickle, writer); use one of ' +
        "those or create agents/writr/AGENT.md.",
    );
  });
});

describe("renderSystemPrompt", () => {
  it("substitutes the workspace and the local date with its zone", () => {
    const agent = resolveAgent(new Map(), "pickle", "pickle");
    const prompt = renderSystemPrompt(
      { ...agent, prompt: "Work in {{workspace}}. Now: {{ now }}." },
      {
        workspace: "/home/me/bot",
        now: new Date("2025-06-01T06:00:00Z"),
        timezone: "Europe/Berlin",
      },
    );
    expect(prompt).toBe("Work in /home/me/bot. Now: 2025-06-01 (Sunday, Europe/Berlin).");
  });

  it("keeps the same prompt all day, so the cached prompt stays valid, and leaves other braces alone", () => {
    const agent = { ...resolveAgent(new Map(), "p", "p"), prompt: "{{now}} {{other}}" };
    const at = (iso: string) =>
      renderSystemPrompt(agent, { workspace: "/w", now: new Date(iso), timezone: "UTC" });
    expect(at("2025-01-01T00:00:00Z")).toBe("2025-01-01 (Wednesday, UTC) {{other}}");
    expect(at("2025-01-01T23:59:59Z")).toBe(at("2025-01-01T00:00:00Z"));
  });

  it("formats the current time with its offset, +00:00 for UTC", () => {
    expect(formatLocalTime(new Date("2025-06-01T06:00:00Z"), "Europe/Berlin")).toBe(
      "2025-06-01T08:00:00+02:00 (Sunday, Europe/Berlin)",
    );
    expect(formatLocalTime(new Date("2025-01-01T00:00:00Z"), "UTC")).toBe(
      "2025-01-01T00:00:00+00:00 (Wednesday, UTC)",
    );
  });

  it("fills the placeholders of the built-in prompt", () => {
    const agent = resolveAgent(new Map(), "pickle", "pickle");
    const prompt = renderSystemPrompt(agent, {
      workspace: "/w",
      now: new Date(),
      timezone: "UTC",
    });
    expect(prompt).toContain("/w");
    expect(prompt).not.toContain("{{");
  });
});
