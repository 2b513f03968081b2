import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEditTool } from "../../src/agents/tools/edit.js";
import { createReadTool } from "../../src/agents/tools/read.js";
import { createWriteTool } from "../../src/agents/tools/write.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

const read = createReadTool();
const write = createWriteTool();
const edit = createEditTool();

let temp: TempWorkspace;
beforeEach(() => {
  temp = createTempWorkspace();
  const file = (path: string, content: string) => {
    mkdirSync(join(temp.workspace, path, ".."), { recursive: true });
    writeFileSync(join(temp.workspace, path), content);
  };
  file(".env", "ANTHROPIC_API_KEY=sk-secret\n");
  file("picklebot.yaml", "telegram:\n  bot_token: 123:secret\n");
  file("history/picklebot.db", "DATABASE");
  file("agents/pickle/AGENT.md", "---\nname: Pickle\ndescription: D\n---\nHi\n");
  file("crons/daily.yaml", 'schedule: "0 8 * * *"\nprompt: hi\n');
});
afterEach(() => temp.remove());

const SECRET =
  "it holds the owner's secrets (API keys, bot tokens); file tools never read or write it";
const HISTORY =
  "it is the history folder (database, WAL, lock, jsonl history); file tools never read or write it";
const controlPlane = (folder: string) =>
  `${folder}/ is the agents' control plane (agents/, crons/, skills/); writes there are refused unless the agent's approvals policy has a rule for that path, e.g. write: {"${folder}/**": ask} in AGENT.md`;

describe("protected paths", () => {
  it("refuses to read .env and picklebot.yaml", async () => {
    await expect(read.run({ path: ".env" }, temp.context())).rejects.toThrow(
      `".env" is protected: ${SECRET}`,
    );
    await expect(read.run({ path: "picklebot.yaml" }, temp.context())).rejects.toThrow(
      `"picklebot.yaml" is protected: ${SECRET}`,
    );
    await expect(write.run({ path: ".env", content: "X=1" }, temp.context())).rejects.toThrow(
      `".env" is protected: ${SECRET}`,
    );
  });

  it("refuses to read or write the history folder, wherever history.path puts it", async () => {
    await expect(read.run({ path: "history/picklebot.db" }, temp.context())).rejects.toThrow(
      `"history/picklebot.db" is protected: ${HISTORY}`,
    );
    await expect(
      write.run({ path: "history/picklebot.db", content: "garbage" }, temp.context()),
    ).rejects.toThrow(`"history/picklebot.db" is protected: ${HISTORY}`);
    await expect(read.run({ path: "history" }, temp.context())).rejects.toThrow(HISTORY);
    expect(readFileSync(join(temp.workspace, "history/picklebot.db"), "utf8")).toBe("DATABASE");
    mkdirSync(join(temp.workspace, "data"));
    const moved = { ...temp.context(), historyPath: join(temp.workspace, "data") };
    await expect(write.run({ path: "data/x.jsonl", content: "{}" }, moved)).rejects.toThrow(
      HISTORY,
    );
  });

  it("refuses writes to agents/, crons/ and skills/ without a grant, but not reads", async () => {
    const context = temp.context();
    await expect(
      write.run({ path: "agents/x/AGENT.md", content: "---\ntools: [bash]\n---\n" }, context),
    ).rejects.toThrow(`"agents/x/AGENT.md" is protected: ${controlPlane("agents")}`);
    await expect(
      write.run({ path: "crons/a.yaml", content: 'schedule: "* * * * *"' }, context),
    ).rejects.toThrow(`"crons/a.yaml" is protected: ${controlPlane("crons")}`);
    await expect(write.run({ path: "skills/s.md", content: "x" }, context)).rejects.toThrow(
      controlPlane("skills"),
    );
    await expect(
      edit.run({ path: "agents/pickle/AGENT.md", old_text: "Hi", new_text: "Ho" }, context),
    ).rejects.toThrow(controlPlane("agents"));
    expect(await read.run({ path: "crons/daily.yaml" }, context)).toContain("schedule");
  });

  it("lets a granted call write the control plane", async () => {
    const granted = { ...temp.context(), controlPlaneWrite: true };
    expect(await write.run({ path: "crons/a.yaml", content: "x" }, granted)).toBe(
      "wrote 1 bytes to crons/a.yaml",
    );
    await expect(write.run({ path: ".env", content: "X=1" }, granted)).rejects.toThrow(SECRET);
  });

  it("refuses a symlink that leads to .env, history/ or (for writes) crons/", async () => {
    symlinkSync(join(temp.workspace, ".env"), join(temp.workspace, "notes.txt"));
    symlinkSync("history", join(temp.workspace, "old"));
    symlinkSync("crons", join(temp.workspace, "plans"));
    await expect(read.run({ path: "notes.txt" }, temp.context())).rejects.toThrow(
      `"notes.txt" leads to ".env", which is protected: ${SECRET}`,
    );
    await expect(read.run({ path: "old/picklebot.db" }, temp.context())).rejects.toThrow(
      `"old/picklebot.db" leads to "history/picklebot.db", which is protected: ${HISTORY}`,
    );
    await expect(
      write.run({ path: "plans/evil.yaml", content: "x" }, temp.context()),
    ).rejects.toThrow(controlPlane("crons"));
  });

  it("refuses a hard link to .env or to the database, for reads and writes", async () => {
    linkSync(join(temp.workspace, ".env"), join(temp.workspace, "innocent.txt"));
    linkSync(join(temp.workspace, "history/picklebot.db"), join(temp.workspace, "copy.db"));
    await expect(read.run({ path: "innocent.txt" }, temp.context())).rejects.toThrow(
      '"innocent.txt" is a hard link to ".env", which is protected; file tools never read or write it',
    );
    await expect(
      write.run({ path: "copy.db", content: "garbage" }, temp.context()),
    ).rejects.toThrow('"copy.db" is a hard link to "history/picklebot.db", which is protected');
    await expect(
      edit.run({ path: "innocent.txt", old_text: "sk", new_text: "x" }, temp.context()),
    ).rejects.toThrow('is a hard link to ".env"');
  });
});

/**
 * Swaps `dir` between a real folder and a symlink as fast as it can, in another process,
 * so that the swap lands between a tool's check and its open. A `dir` that a write's
 * mkdir created while neither was there is removed.
 */
function startFlipping(dir: string, folder: string, link: string): ChildProcess {
  const script = `const fs = require("node:fs");
const [dir, folder, link] = process.argv.slice(1);
const removeStray = () => { if (fs.existsSync(folder) && fs.lstatSync(link, { throwIfNoEntry: false })) fs.rmSync(dir, { recursive: true, force: true }); };
const swap = (from, to) => { try { fs.renameSync(from, to); } catch { try { removeStray(); } catch {} } };
for (;;) { swap(folder, dir); swap(dir, folder); swap(link, dir); swap(dir, link); }`;
  return spawn(process.execPath, ["-e", script, dir, folder, link], { stdio: "ignore" });
}

describe("the workspace boundary at open time", () => {
  const RUNS = 1000;

  async function flipWhile(
    target: string,
    run: (index: number) => Promise<string>,
  ): Promise<Map<string, number>> {
    const folder = join(temp.workspace, "folder");
    const link = join(temp.workspace, "link");
    mkdirSync(folder);
    writeFileSync(join(folder, "picklebot.db"), "inside");
    symlinkSync(target, link);
    const flipper = startFlipping(join(temp.workspace, "dir"), folder, link);
    const seen = new Map<string, number>();
    try {
      for (let index = 0; index < RUNS; index += 1) {
        const outcome = await run(index).catch((thrown: Error) => `error: ${thrown.message}`);
        const key = outcome?.startsWith("wrote") ? "wrote" : (outcome ?? "");
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    } finally {
      flipper.kill("SIGKILL");
    }
    // The flipper ran through all the calls (under load, every call may have been refused).
    expect(flipper.exitCode).toBeNull();
    expect([...seen.values()].reduce((sum, count) => sum + count, 0)).toBe(RUNS);
    return seen;
  }

  it("never reads outside the workspace while a folder flips to a symlink", async () => {
    writeFileSync(join(temp.outside, "picklebot.db"), "OUTSIDE SECRET");
    const seen = await flipWhile(temp.outside, () =>
      read.run({ path: "dir/picklebot.db" }, temp.context()),
    );
    expect([...seen.keys()].filter((text) => text.includes("OUTSIDE"))).toEqual([]);
  });

  it("never reads the history folder while a folder flips to a symlink into it", async () => {
    const seen = await flipWhile(join(temp.workspace, "history"), () =>
      read.run({ path: "dir/picklebot.db" }, temp.context()),
    );
    expect([...seen.keys()].filter((text) => text.includes("DATABASE"))).toEqual([]);
  });

  it("never writes outside the workspace while a folder flips to a symlink", async () => {
    writeFileSync(join(temp.outside, "picklebot.db"), "OUTSIDE SECRET");
    await flipWhile(temp.outside, (index) =>
      write.run({ path: "dir/picklebot.db", content: `write ${index}` }, temp.context()),
    );
    expect(readFileSync(join(temp.outside, "picklebot.db"), "utf8")).toBe("OUTSIDE SECRET");
    expect(readdirSync(temp.outside)).toEqual(["picklebot.db"]);
  });

  it("never writes into history/ while a folder flips to a symlink into it", async () => {
    await flipWhile(join(temp.workspace, "history"), (index) =>
      write.run({ path: "dir/picklebot.db", content: `write ${index}` }, temp.context()),
    );
    expect(readFileSync(join(temp.workspace, "history/picklebot.db"), "utf8")).toBe("DATABASE");
    expect(readdirSync(join(temp.workspace, "history"))).toEqual(["picklebot.db"]);
  });
});

describe("the config file, whatever the loader would call it", () => {
  beforeEach(() => {
    rmSync(join(temp.workspace, "picklebot.yaml"));
    writeFileSync(join(temp.workspace, "picklebot.yml"), "llm:\n  api_key: sk-yml-secret\n");
  });

  it("refuses to read, write or edit picklebot.yml in a picklebot.yml workspace", async () => {
    await expect(read.run({ path: "picklebot.yml" }, temp.context())).rejects.toThrow(
      `"picklebot.yml" is protected: ${SECRET}`,
    );
    await expect(
      write.run(
        { path: "picklebot.yml", content: "llm:\n  base_url: http://evil\n" },
        temp.context(),
      ),
    ).rejects.toThrow(`"picklebot.yml" is protected: ${SECRET}`);
    await expect(
      edit.run({ path: "picklebot.yml", old_text: "sk-", new_text: "x" }, temp.context()),
    ).rejects.toThrow(`"picklebot.yml" is protected: ${SECRET}`);
    expect(readFileSync(join(temp.workspace, "picklebot.yml"), "utf8")).toContain("sk-yml-secret");
  });

  it("refuses to create picklebot.yaml next to it", async () => {
    await expect(
      write.run(
        { path: "picklebot.yaml", content: "llm:\n  base_url: http://evil\n" },
        temp.context(),
      ),
    ).rejects.toThrow(`"picklebot.yaml" is protected: ${SECRET}`);
    expect(existsSync(join(temp.workspace, "picklebot.yaml"))).toBe(false);
  });

  it("refuses the file a config name is a symlink to", async () => {
    mkdirSync(join(temp.workspace, "conf"));
    renameSync(join(temp.workspace, "picklebot.yml"), join(temp.workspace, "conf/settings.yaml"));
    symlinkSync("conf/settings.yaml", join(temp.workspace, "picklebot.yml"));
    await expect(read.run({ path: "conf/settings.yaml" }, temp.context())).rejects.toThrow(
      `"conf/settings.yaml" is protected: ${SECRET}`,
    );
    await expect(
      write.run({ path: "conf/settings.yaml", content: "x" }, temp.context()),
    ).rejects.toThrow(SECRET);
  });
});
