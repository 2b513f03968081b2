import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command } from "commander";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadAgents } from "../../src/agents/definition.js";
import { initCommand } from "../../src/cli/init.js";
import { loadConfig } from "../../src/config/index.js";

let root: string;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "picklebot-init-"));
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

async function runInit(args: string[]): Promise<string> {
  let printed = "";
  const output = { write: (text: string) => (printed += text) };
  await initCommand({ output }).parseAsync(args, { from: "user" });
  return printed;
}

describe("picklebot init", () => {
  it("creates a workspace that loads without errors", async () => {
    const workspace = path.join(root, "bot");
    const printed = await runInit([workspace]);

    for (const file of [
      "picklebot.yaml",
      "agents/pickle/AGENT.md",
      "crons/example.yaml",
      "history/.gitkeep",
    ]) {
      expect(fs.existsSync(path.join(workspace, file))).toBe(true);
      expect(printed).toContain(`created ${file}`);
    }
    expect(printed).toContain("ANTHROPIC_API_KEY");
    expect(printed).toContain(`picklebot chat --workspace ${workspace}`);

    const config = loadConfig(workspace, {});
    expect(config.default_agent).toBe("pickle");
    expect(config.http.port).toBe(8787);
    const { agents, errors } = loadAgents(workspace);
    expect(errors).toEqual([]);
    expect(agents.get("pickle")?.tools).toEqual(["read", "write", "edit", "web_fetch"]);
  });

  it("comments every key of picklebot.yaml and writes a disabled example cron", async () => {
    const workspace = path.join(root, "bot");
    await runInit([workspace]);
    const yaml = fs.readFileSync(path.join(workspace, "picklebot.yaml"), "utf8");
    for (const key of ["timezone:", "api_key:", "base_url:", "url:", "api_root:", "api_base:"]) {
      expect(yaml).toContain(`# ${key}`);
    }
    const cron = parse(fs.readFileSync(path.join(workspace, "crons/example.yaml"), "utf8"));
    expect(cron).toMatchObject({ schedule: "0 8 * * *", agent: "pickle", enabled: false });
    expect(cron.prompt).toEqual(expect.any(String));
  });

  it("keeps existing files untouched", async () => {
    fs.writeFileSync(path.join(root, "picklebot.yaml"), "default_agent: mine\n");
    const printed = await runInit([root]);
    expect(printed).toContain("kept existing picklebot.yaml");
    expect(printed).toContain("created agents/pickle/AGENT.md");
    expect(fs.readFileSync(path.join(root, "picklebot.yaml"), "utf8")).toBe(
      "default_agent: mine\n",
    );

    const again = await runInit([root]);
    expect(again).toContain("kept existing agents/pickle/AGENT.md");
    expect(again).not.toContain("created");
  });

  it("uses the global --workspace when no folder is given", async () => {
    const workspace = path.join(root, "from-option");
    const program = new Command("picklebot").option("-w, --workspace <dir>");
    program.addCommand(initCommand({ output: { write: () => true } }));
    await program.parseAsync(["--workspace", workspace, "init"], { from: "user" });
    expect(fs.existsSync(path.join(workspace, "picklebot.yaml"))).toBe(true);
  });

  it("describes itself in --help", () => {
    expect(initCommand().helpInformation()).toContain("create a workspace");
  });
});
