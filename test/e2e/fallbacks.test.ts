/**
 * Fallback chains from Telegram: `picklebot server` as a child process, the real telegraf
 * against the fake Bot API, and two fake Anthropic servers as two named models: the
 * default entry (`llm:`) and `backup`.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, type FakeReply, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { nthTelegramReply, startBusServer, telegramYaml } from "../helpers/bus.js";
import { CLI, childEnv, runCli } from "../helpers/cli.js";
import { killAllServers, openWorkspaceDb } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;
const NOTICE =
  "(Answered by backup, backup-model: default is failing (503); default is tried again on the next message.)";

let primary: FakeAnthropic;
let backup: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;
/** The primary's answer while its script is empty: a 503 until the test brings it back. */
let primaryAnswer: FakeReply;
/** The backup's answer while its script is empty. */
let backupAnswer: FakeReply;

beforeEach(async () => {
  primaryAnswer = { error: { status: 503 } };
  primary = await startFakeAnthropic({ defaultReply: () => primaryAnswer });
  backupAnswer = { text: "backup here" };
  backup = await startFakeAnthropic({ defaultReply: () => backupAnswer });
  telegram = await startFakeTelegram();
  ws = makeWorkspace({
    "picklebot.yaml": [
      "llm:",
      "  api_key: test-key",
      `  base_url: ${primary.url}`,
      "  timeout_s: 20",
      "  fallbacks: [backup]",
      "  fallback_cooldown_s: 0",
      "models:",
      "  backup:",
      "    model: backup-model",
      `    base_url: ${backup.url}`,
      "http:",
      "  port: 0",
      telegramYaml(telegram, { allowedUserIds: [OWNER] }),
    ].join("\n"),
  });
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await primary.close();
  await backup.close();
  ws.remove();
});

function say(text: string) {
  return telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text });
}

/** `picklebot chat` on a pseudo-terminal (`script`): type into it, wait for its screen. */
function terminalChat() {
  const command = `${process.execPath} ${CLI} chat --workspace ${ws.dir}`;
  const child = spawn("script", ["-qfec", command, "/dev/null"], { env: childEnv() });
  let screen = "";
  child.stdout.on("data", (chunk: Buffer) => (screen += chunk));
  return {
    screen: () => screen,
    type: (text: string) => child.stdin.write(text),
    shows: (text: string, times = 1) =>
      waitFor(
        () => screen.split(text).length > times,
        `the terminal to show ${JSON.stringify(text)} ${times} time(s)`,
        20_000,
      ),
    exited: new Promise((resolve) => child.on("close", resolve)),
  };
}

describe("fallback chains in the terminal (picklebot chat on a TTY)", () => {
  it("shows the one-line notice with the fallback's streamed reply while the primary fails, and none once it is back", async () => {
    const chat = terminalChat();
    await chat.shows("you ›");

    chat.type("hello?\n");
    await chat.shows("backup here");
    await chat.shows("you ›", 2);
    const first = chat.screen();
    expect(first).toContain(NOTICE);
    expect(first.indexOf(NOTICE)).toBeGreaterThan(first.indexOf("backup here"));

    primaryAnswer = { text: "primary is back" };
    chat.type("and now?\n");
    await chat.shows("primary is back");
    await chat.shows("you ›", 3);
    expect(chat.screen().split("Answered by")).toHaveLength(2);
    chat.type("/exit\n");
    expect(await chat.exited).toBe(0);
    expect(backup.requests).toHaveLength(1);
  });
});

describe("fallback chains", () => {
  it("answers from the fallback with a one-line notice while the primary fails, then from the primary again", async () => {
    await startBusServer(ws.dir, ["telegram"]);

    await say("hello?");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toBe(`${NOTICE}\n\nbackup here`);
    expect(backup.requests.map((request) => request.body.model)).toEqual(["backup-model"]);

    primaryAnswer = { text: "primary is back" };
    await say("and now?");
    expect(await nthTelegramReply(telegram, OWNER, 2)).toBe("primary is back");
    expect(backup.requests).toHaveLength(1);
    const history = backup.requests[0]?.body.messages ?? [];
    expect(JSON.stringify(history)).toContain("hello?");

    const db = openWorkspaceDb(ws.dir);
    const models = db.prepare("SELECT model FROM usage ORDER BY created_at, seq").pluck().all();
    db.close();
    expect(models).toEqual(["backup-model", "claude-sonnet-4-6"]);
  });

  it("moves on at once from a primary rate-limited for an hour (429, Retry-After: 3600), saying so", async () => {
    primaryAnswer = { error: { status: 429, retryAfterS: 3600 } };
    await startBusServer(ws.dir, ["telegram"]);

    await say("hello?");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toBe(
      "(Answered by backup, backup-model: default is rate-limited (429, retry after 3600 s); default is tried again on the next message.)\n\nbackup here",
    );
    // No short retry that would sleep for the hour: one call, then the fallback.
    expect(primary.requests).toHaveLength(1);
  });

  it("tells the chat when every model of the chain fails, without a notice of a fallback that did not answer", async () => {
    backupAnswer = { error: { status: 503 } };
    const yaml = readFileSync(join(ws.dir, "picklebot.yaml"), "utf8");
    ws.write("picklebot.yaml", `${yaml}\nworkers:\n  outage_budget_s: 0\n`);
    await startBusServer(ws.dir, ["telegram"]);

    await say("hello?");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toMatch(
      /^Sorry, I could not finish this after \d+ attempts: The Anthropic API answered with status 503/,
    );
    // Each attempt went down the whole chain.
    expect(backup.requests.length).toBeGreaterThan(0);
    expect(telegram.messages(OWNER).join("\n")).not.toContain("Answered by");
  });

  it("continues a turn whose tools already ran on the fallback, without running them again", async () => {
    ws.write(
      "agents/pickle/AGENT.md",
      "---\nname: Pickle\ndescription: x\ntools: [bash]\napprovals:\n  bash: allow\n---\nYou are Pickle.\n",
    );
    primary.script({
      toolUses: [{ name: "bash", input: { command: "echo ran >> runs.txt" } }],
    });
    await startBusServer(ws.dir, ["telegram"]);

    await say("note that it ran");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toBe(`${NOTICE}\n\nbackup here`);
    expect(readFileSync(join(ws.dir, "runs.txt"), "utf8")).toBe("ran\n");
    const sent = JSON.stringify(backup.requests[0]?.body.messages);
    expect(sent).toContain('"type":"tool_use"');
    expect(sent).toContain('"type":"tool_result"');
    const toolUseCalls = primary.requests.filter((request) =>
      JSON.stringify(request.body.messages).includes("tool_result"),
    );
    expect(primary.requests.length - toolUseCalls.length).toBe(1);
  });

  it("/model NAME switches the chat to another named model, which answers its next message", async () => {
    primaryAnswer = { text: "primary here" };
    await startBusServer(ws.dir, ["telegram"]);

    await say("/model backup");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toBe(
      "This conversation now uses backup (backup-model); no fallbacks. /new goes back to the agent's model.",
    );
    await say("who answers?");
    expect(await nthTelegramReply(telegram, OWNER, 2)).toBe("backup here");
    expect(primary.requests).toHaveLength(0);
    await say("/status");
    expect(await nthTelegramReply(telegram, OWNER, 3)).toContain("\nLast answer: backup-model");
  });

  it("runs a cron on the named model it names, and refuses a cron whose model is a typo of one", async () => {
    primaryAnswer = { text: "primary here" };
    ws.write(
      "crons/digest.yaml",
      'schedule: "0 0 1 1 *"\nprompt: digest\nmodel: backup\nenabled: false\n',
    );
    ws.write(
      "crons/typo.yaml",
      'schedule: "0 0 1 1 *"\nprompt: digest\nmodel: bakup\nenabled: false\n',
    );
    await startBusServer(ws.dir, ["telegram"]);

    const run = await runCli(["cron", "run", "digest", "--workspace", ws.dir]);
    expect(run.code).toBe(0);
    await waitFor(() => backup.requests.length === 1, "the cron's call to backup", 20_000);
    expect(backup.requests[0]?.body.model).toBe("backup-model");
    expect(primary.requests).toHaveLength(0);

    const typo = await runCli(["cron", "run", "typo", "--workspace", ws.dir]);
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toContain("typo.yaml");
    expect(typo.stderr).toContain('"model" "bakup" is no named model (did you mean "backup"?)');
  });
});
