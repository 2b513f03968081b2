/**
 * Errors a user can act on, through the real CLI: each problem of issue 14 (a folder that
 * is not a workspace, picklebot.yml, a damaged or unwritable database, a cron naming an
 * unknown agent, a broken AGENT.md, times without their zone) gives one sentence naming
 * the file and the fix and exit code 1, never a stack trace or a crash loop.
 *
 * "Not writable" is made the way it happens: files owned by root, picklebot run by
 * another user. When the tests run as root they run the CLI as `nobody`; otherwise
 * they take the write permission away with chmod (root ignores it, so that variant
 * only runs when the tests are not root).
 */
import fs, { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { type CliResult, type RunOptions, runCli } from "../helpers/cli.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const IS_ROOT = process.getuid?.() === 0;
/** `nobody` on Debian and most distributions. */
const OTHER_USER = { uid: 65534, gid: 65534 };

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({ "picklebot.yaml": "timezone: UTC\n" });
});

afterEach(async () => {
  await killAllServers();
  ws.remove();
});

function expectOneSentence(run: CliResult, ...parts: (string | RegExp)[]): void {
  expect(run.code).toBe(1);
  expect(run.stderr).not.toMatch(/unexpected error|\n\s+at /);
  expect(run.stderr.trim().split("\n")).toHaveLength(1);
  for (const part of parts) expect(run.stderr).toMatch(part);
}

describe("a folder that is not a workspace", () => {
  it.each([["status"], ["jobs"], ["cron", "list"], ["sessions"], ["usage"], ["pairing", "list"]])(
    "%s refuses it with the fix and creates nothing",
    async (...args) => {
      const empty = mkdtempSync(path.join(tmpdir(), "picklebot-not-ws-"));
      try {
        const run = await runCli(args, { cwd: empty });

        expectOneSentence(
          run,
          "no picklebot.yaml or agents/ here; run picklebot init, or pass --workspace",
        );
        expect(fs.readdirSync(empty)).toEqual([]);
      } finally {
        fs.rmSync(empty, { recursive: true, force: true });
      }
    },
  );

  it("is still accepted when it has agents/ but no picklebot.yaml", async () => {
    fs.rmSync(path.join(ws.dir, "picklebot.yaml"));
    ws.write("agents/pickle/AGENT.md", "---\nname: Pickle\ndescription: d\n---\nHello.\n");

    const run = await runCli(["status", "--json", "--workspace", ws.dir]);

    expect(run.code).toBe(0);
  });
});

describe("picklebot.yml", () => {
  it("is read when it is the only config file", async () => {
    fs.rmSync(path.join(ws.dir, "picklebot.yaml"));
    ws.write("picklebot.yml", "timezone: Asia/Tokyo\n");
    ws.write("crons/daily.yaml", 'schedule: "0 8 * * *"\nprompt: "hello"\n');

    const run = await runCli(["cron", "list", "--json", "--workspace", ws.dir]);

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([expect.objectContaining({ timezone: "Asia/Tokyo" })]);
  });

  it("next to picklebot.yaml is an error naming both", async () => {
    ws.write("picklebot.yml", "timezone: Asia/Tokyo\n");

    const run = await runCli(["status", "--workspace", ws.dir]);

    expectOneSentence(
      run,
      path.join(ws.dir, "picklebot.yaml"),
      path.join(ws.dir, "picklebot.yml"),
      /keep one/,
    );
  });
});

describe("the database", () => {
  it("damaged: one sentence with the file and the fix, for a command and the server", async () => {
    const db = ws.write("history/picklebot.db", "this is not a database ".repeat(300));

    const status = await runCli(["status", "--workspace", ws.dir]);
    const server = await runCli(["server", "--workspace", ws.dir]);

    expectOneSentence(status, `${db} is damaged`, /restore a backup/);
    expectOneSentence(server, `${db} is damaged`);
  });

  it("failing after it opened (a table gone): one sentence pointing to doctor", async () => {
    expect((await runCli(["status", "--workspace", ws.dir])).code).toBe(0);
    const db = new Database(path.join(ws.dir, "history", "picklebot.db"));
    db.exec("DROP TABLE jobs");
    db.close();

    const run = await runCli(["jobs", "--workspace", ws.dir]);

    expectOneSentence(
      run,
      /the database failed \(no such table: jobs, SQLITE_ERROR\); run picklebot doctor/,
    );
  });

  describe.runIf(IS_ROOT)("owned by root, picklebot run by another user", () => {
    const asOther: RunOptions = { user: OTHER_USER };

    beforeEach(() => {
      ws.write("history/.gitkeep", "");
      chownTree(ws.dir, OTHER_USER);
    });

    it("a history/ folder it cannot write: commands say so instead of a stack trace", async () => {
      fs.chownSync(path.join(ws.dir, "history"), 0, 0);

      const run = await runCli(["status", "--workspace", ws.dir], asOther);
      const server = await runCli(["server", "--workspace", ws.dir], asOther);

      expectOneSentence(
        run,
        `cannot write ${path.join(ws.dir, "history", "picklebot.db")}`,
        /owned by uid 0 while picklebot runs as uid 65534/,
        /chown/,
      );
      expectOneSentence(server, `cannot write ${path.join(ws.dir, "history", "server.lock")}`);
    });

    it("a picklebot.db left by `sudo picklebot server`: the server stops at start, naming it", async () => {
      const made = await runCli(["status", "--workspace", ws.dir]);
      expect(made.code).toBe(0);
      const db = path.join(ws.dir, "history", "picklebot.db");
      expect(fs.statSync(db).uid).toBe(0);

      const run = await runCli(["server", "--workspace", ws.dir], {
        ...asOther,
        timeoutMs: 15_000,
      });

      expectOneSentence(
        run,
        `cannot write ${db}`,
        /owned by uid 0/,
        /never run picklebot with sudo/,
      );
      expect(run.stdout).not.toMatch(/readonly database|worker/);
    });
  });

  it("a read-only picklebot.db: the server stops at start, naming it", async () => {
    // Root may write any file: as root, the owner of the workspace is another user.
    const asOwner: RunOptions = IS_ROOT ? { user: OTHER_USER } : {};
    if (IS_ROOT) {
      ws.write("history/.gitkeep", "");
      chownTree(ws.dir, OTHER_USER);
    }
    const made = await runCli(["status", "--workspace", ws.dir], asOwner);
    expect(made.code).toBe(0);
    const db = path.join(ws.dir, "history", "picklebot.db");
    fs.chmodSync(db, 0o444);

    const run = await runCli(["server", "--workspace", ws.dir], { ...asOwner, timeoutMs: 15_000 });

    expectOneSentence(run, `cannot write ${db}`);
  });
});

describe("crons and agents", () => {
  let model: FakeAnthropic;

  beforeEach(async () => {
    model = await startFakeAnthropic();
    ws.write("picklebot.yaml", fakeModelConfig(model.url, "timezone: UTC\n"));
  });

  afterEach(async () => {
    await model.close();
  });

  it("a cron naming an unknown agent is reported when it loads, by cron list and cron run", async () => {
    const file = ws.write(
      "crons/digest.yaml",
      'schedule: "0 7 * * *"\nagent: picke\nprompt: "news"\n',
    );

    const list = await runCli(["cron", "list", "--workspace", ws.dir]);
    const run = await runCli(["cron", "run", "digest", "--workspace", ws.dir]);

    expect(list.code).toBe(0);
    expect(list.stderr).toContain(`${file}: "agent" "picke" is not an agent of this workspace`);
    expectOneSentence(run, `${file}: "agent" "picke"`, /create agents\/picke\/AGENT\.md/);
  });

  it("the server logs a cron with an unknown agent at start, and a broken AGENT.md, as JSON", async () => {
    const cron = ws.write(
      "crons/digest.yaml",
      'schedule: "0 7 * * *"\nagent: ghost\nprompt: "x"\n',
    );
    const agent = ws.write("agents/bad/AGENT.md", "---\nname: [unclosed\n---\nHi.\n");

    const server = await startServer(ws.dir);

    const cronLine = await server.waitForLog((line) => line.file === cron);
    const agentLine = await server.waitForLog((line) => line.agent === "bad");
    expect(cronLine).toMatchObject({ level: 50, msg: expect.stringContaining('"ghost"') });
    expect(agentLine).toMatchObject({ level: 40, msg: expect.stringContaining(agent) });
    expect(server.stderr).toBe("");
  });

  it("chat --agent with a broken AGENT.md says it is broken and why, not unknown", async () => {
    const agent = ws.write("agents/bad/AGENT.md", "no front matter here\n");

    const run = await runCli(["chat", "--agent", "bad", "--workspace", ws.dir]);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`agent "bad" is broken`);
    expect(run.stderr).toContain(`${agent}: missing YAML front matter`);
    expect(run.stderr).not.toContain("unknown agent");
  });

  it("cron list shows next runs on the cron's own clock, with its zone", async () => {
    ws.write(
      "crons/morning.yaml",
      'schedule: "30 6 * * *"\ntimezone: America/New_York\nprompt: "hi"\n',
    );

    const run = await runCli(["cron", "list", "--workspace", ws.dir]);

    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\d{4}-\d{2}-\d{2} 06:30:00 America\/New_York/);
  });
});

it("--version prints the version of package.json", async () => {
  const { version } = JSON.parse(fs.readFileSync("package.json", "utf8")) as { version: string };

  const run = await runCli(["--version"]);

  expect(run).toMatchObject({ code: 0, stdout: `${version}\n` });
});

function chownTree(dir: string, user: { uid: number; gid: number }): void {
  fs.chownSync(dir, user.uid, user.gid);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(full, user);
    else fs.chownSync(full, user.uid, user.gid);
  }
}
