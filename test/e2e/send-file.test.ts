/**
 * `send_file` end to end: `picklebot server` as a child process runs a cron whose agent
 * sends a workspace file into the cron's `deliver_to` chat, on the real telegraf,
 * @discordjs/rest and @slack/web-api clients against the fakes. The server is SIGKILLed
 * while the upload is on its
 * way (the fake holds it unanswered) and started again: the file arrives exactly once,
 * from the outbox, with the bytes the tool read.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/ports/index.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord.js";
import { type FakeSlack, startFakeSlack } from "../fakes/slack.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import {
  busWorkspace,
  discordYaml,
  slackYaml,
  startBusServer,
  telegramYaml,
} from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { killAllServers } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;
const REPORT = "%PDF-1.4\nThe quarterly pickle report: 42 jars.\n";

const SENDER_AGENT =
  "---\nname: Sender\ndescription: Sends reports\ntools: [send_file]\n---\nYou send reports.\n";

let model: FakeAnthropic;
let ws: TempWorkspace | undefined;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
});

afterEach(async () => {
  await killAllServers();
  await model.close();
  ws?.remove();
  ws = undefined;
});

/** A workspace with the report, the sender agent and a cron delivering to `deliverTo`. */
function workspaceFor(busYaml: string, deliverTo: string): TempWorkspace {
  return busWorkspace(model.url, busYaml, {
    "reports/q3.pdf": REPORT,
    "agents/sender/AGENT.md": SENDER_AGENT,
    "crons/report.yaml": `schedule: "0 0 1 1 *"\nagent: sender\nprompt: send the report\nenabled: false\ndeliver_to: ${deliverTo}\n`,
  });
}

async function cli(...args: string[]): Promise<string> {
  const result = await runCli([...args, "--workspace", ws?.dir ?? ""]);
  if (result.code !== 0) throw new Error(`picklebot ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The model asks for the report once, then answers; a resumed turn gets the same script. */
function scriptSendReport(): void {
  model.script(
    { toolUses: [{ name: "send_file", input: { path: "reports/q3.pdf", caption: "Q3 report" } }] },
    { text: "Report sent." },
  );
}

/** Waits until the outbox has no entry waiting. */
async function outboxEmpty(): Promise<void> {
  await waitFor(
    async () => JSON.parse(await cli("status", "--json")).outbox.pending === 0,
    "the outbox has no pending entry",
    20_000,
  );
}

describe("send_file", () => {
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let slack: FakeSlack;

  beforeEach(async () => {
    telegram = await startFakeTelegram();
    discord = await startFakeDiscord();
    slack = await startFakeSlack();
  });

  afterEach(async () => {
    await telegram.close();
    await discord.close();
    await slack.close();
  });

  it("sends a workspace file to Telegram exactly once across a SIGKILL during the upload", async () => {
    ws = workspaceFor(telegramYaml(telegram), `telegram:${OWNER}`);
    telegram.openChat(OWNER);
    telegram.hangNext("sendDocument");
    scriptSendReport();
    const first = await startBusServer(ws.dir, ["telegram"]);
    const job = JSON.parse(await cli("cron", "run", "report", "--json")) as Job;
    await telegram.waitFor(() => telegram.callsOf("sendDocument").length === 1, 15_000);
    await first.kill();
    // The workspace file changes after the tool read it: the stored copy is what goes out.
    ws.write("reports/q3.pdf", "a later draft");

    const second = await startBusServer(ws.dir, ["telegram"]);
    await second.jobOutcomes(job.id, 1, 20_000);
    await outboxEmpty();
    const files = telegram.filesOf(OWNER);
    expect(files.map((file) => [file.method, file.filename, file.sha256, file.caption])).toEqual([
      ["sendDocument", "q3.pdf", sha256(REPORT), "Q3 report"],
    ]);
    const accepted = telegram.callsOf("sendDocument").filter((call) => call.status === 200);
    expect(accepted).toHaveLength(1);
  });

  it("sends a workspace file to Discord exactly once across a SIGKILL during the upload", async () => {
    const channel = discord.guildChannelId;
    ws = workspaceFor(discordYaml(discord), `discord:${channel}`);
    discord.hangNext("POST /channels/:id/messages");
    scriptSendReport();
    const first = await startBusServer(ws.dir, ["discord"]);
    const job = JSON.parse(await cli("cron", "run", "report", "--json")) as Job;
    await discord.waitFor(
      () => discord.callsTo("POST /channels/:id/messages").length === 1,
      15_000,
    );
    await first.kill();
    ws.write("reports/q3.pdf", "a later draft");

    const second = await startBusServer(ws.dir, ["discord"]);
    await second.jobOutcomes(job.id, 1, 20_000);
    await outboxEmpty();
    const files = discord.filesOf(channel);
    expect(files.map((file) => [file.filename, file.sha256, file.content])).toEqual([
      ["q3.pdf", sha256(REPORT), "Q3 report"],
    ]);
  });

  it("sends a workspace file to Slack exactly once across a SIGKILL while its upload is completed", async () => {
    ws = workspaceFor(slackYaml(slack), `slack:${slack.channelId}`);
    slack.hangNext("files.completeUploadExternal");
    scriptSendReport();
    const first = await startBusServer(ws.dir, ["slack"]);
    const job = JSON.parse(await cli("cron", "run", "report", "--json")) as Job;
    await waitFor(
      () => slack.callsTo("files.completeUploadExternal").length === 1,
      "the completion on its way",
      15_000,
    );
    await first.kill();
    ws.write("reports/q3.pdf", "a later draft");

    const second = await startBusServer(ws.dir, ["slack"]);
    await second.jobOutcomes(job.id, 1, 20_000);
    await outboxEmpty();
    const files = slack.sharedFiles(slack.channelId);
    expect(files.map((file) => [file.name, file.sha256, file.caption])).toEqual([
      ["q3.pdf", sha256(REPORT), "Q3 report"],
    ]);
  });
});
