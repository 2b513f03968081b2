/**
 * `send_file` in process: the real tool, ChatSenders, outbox (SQLite) and delivery, against
 * the in-memory chat platform. What reaches the chat, and every refusal the model is told.
 */
import { createHash } from "node:crypto";
import {
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MediaStore } from "../../src/agents/media/store.js";
import type { RunRequest } from "../../src/agents/runner.js";
import { createSendFileTool } from "../../src/agents/tools/send-file.js";
import { ToolError } from "../../src/base/errors.js";
import { ChatSenders } from "../../src/chat/senders.js";
import { FrontendRegistry } from "../../src/frontends/registry.js";
import {
  CHAT_PLATFORMS,
  type ChatPlatformKind,
  type ReplyTarget,
  type Storage,
  type ToolContext,
} from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { FakeChatPlatform, refused, serverError } from "../fakes/chat-platform.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const CHAT = "42";

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;
let platform: FakeChatPlatform;
let senders: ChatSenders;
let lines: ReturnType<typeof recordingLogger>["lines"];

async function setUp(kind: ChatPlatformKind): Promise<void> {
  ws = makeWorkspace({ "reports/q3.pdf": "%PDF-1.4 report", "chart.png": "\x89PNG image" });
  clock = new TestClock();
  const config = testConfig(ws.dir);
  storage = await openStorage(config, clock);
  platform = new FakeChatPlatform({ kind });
  const recording = recordingLogger();
  lines = recording.lines;
  senders = new ChatSenders({
    platforms: [platform],
    outbox: storage.outbox,
    historyPath: config.history.path,
    frontends: new FrontendRegistry(),
    holder: "test",
    clock,
    logger: recording.logger,
  });
}

afterEach(async () => {
  await storage.close();
  ws.remove();
});

function context(callId = "toolu_1"): ToolContext {
  return {
    workspace: ws.dir,
    signal: new AbortController().signal,
    agentId: "pickle",
    sessionKey: `telegram:${CHAT}`,
    jobId: "j1",
    callId,
    historyPath: join(ws.dir, "history"),
  };
}

function tool(
  replyTo: ReplyTarget = { kind: platform.kind, chatId: CHAT },
  sessionKey = `telegram:${CHAT}`,
) {
  const request = { replyTo, jobId: "j1", sessionKey, sessionId: "s_web" } as RunRequest;
  return createSendFileTool(senders.fileSender(request));
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The error message `run` rejects with, which must be a ToolError. */
async function refusal(run: Promise<string>): Promise<string> {
  const error = await run.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ToolError)) throw new Error(`expected a ToolError, got ${String(error)}`);
  return error.message;
}

describe("send_file", () => {
  beforeEach(() => setUp("telegram"));

  it("sends an image as a photo and any other file as a document, with the caption", async () => {
    const note = await tool().run({ path: "chart.png", caption: "The chart" }, context("c1"));
    await tool().run({ path: "reports/q3.pdf" }, context("c2"));
    expect(note).toBe(`sent chart.png to telegram:${CHAT}`);
    expect(platform.shown(CHAT).map((m) => [m.file?.kind, m.file?.name, m.text])).toEqual([
      ["photo", "chart.png", "The chart"],
      ["document", "q3.pdf", ""],
    ]);
  });

  it("sends a call once, and its stored bytes after an outage even when the file changed", async () => {
    platform.failNext("sendFile", serverError());
    const note = await tool().run({ path: "reports/q3.pdf" }, context());
    expect(note).toMatch(/^queued q3\.pdf for telegram:42; .* will be retried$/);
    ws.write("reports/q3.pdf", "a later draft");
    // The resumed job runs the same call again: nothing new is stored or sent.
    await tool().run({ path: "reports/q3.pdf" }, context());
    clock.advance(60_000);
    const loop = new AbortController();
    const running = senders.deliveries()[0]?.run(loop.signal);
    await waitFor(() => platform.succeeded("sendFile").length === 1, "the file is sent", 10_000);
    loop.abort();
    await running;
    expect(platform.succeeded("sendFile").map((call) => call.file?.sha256)).toEqual([
      sha256("%PDF-1.4 report"),
    ]);
    expect((await storage.outbox.summary()).pending).toBe(0);
  });

  it("keeps an entry whose stored copy is gone as failed, saying so, instead of retrying it", async () => {
    platform.failNext("sendFile", serverError());
    await tool().run({ path: "reports/q3.pdf" }, context());
    const copies = join(ws.dir, "history", "outbox-files");
    for (const name of readdirSync(copies)) rmSync(join(copies, name));
    clock.advance(60_000);
    const loop = new AbortController();
    const running = senders.deliveries()[0]?.run(loop.signal);
    await waitFor(
      async () => (await storage.outbox.summary()).failed === 1,
      "the entry is kept as failed",
      10_000,
    );
    loop.abort();
    await running;
    expect(platform.succeeded("sendFile")).toEqual([]);
    const failed = lines.find((line) => line.msg === "reply refused by the platform; not retried");
    expect(String(failed?.error)).toMatch(/the stored copy of "q3\.pdf" .* cannot be read/);
  });

  it("tells the model when the platform refuses the file for good, and logs why", async () => {
    platform.failNext("sendFile", refused());
    const message = await refusal(tool().run({ path: "reports/q3.pdf" }, context()));
    expect(message).toBe("send_file: telegram:42 refused q3.pdf: 400: Bad Request: chat not found");
    expect(lines.some((line) => line.msg === "reply refused by the platform; not retried")).toBe(
      true,
    );
  });

  it.each([
    ["a missing file", "reports/q4.pdf", /"reports\/q4\.pdf" does not exist/],
    ["a path outside the workspace", "../elsewhere.txt", /outside the workspace/],
    ["the config file", "picklebot.yaml", /picklebot\.yaml/],
    ["the history folder", "history/picklebot.db", /history/],
    ["a folder", "reports", /"reports" is not a file|is a directory/],
  ])("refuses %s before anything is stored or sent", async (_what, path, expected) => {
    ws.write("picklebot.yaml", "llm:\n  api_key: secret\n");
    ws.write("history/picklebot.db", "not for the chat");
    const message = await refusal(tool().run({ path }, context()));
    expect(message).toMatch(expected);
    expect(platform.calls).toEqual([]);
    expect(await storage.outbox.summary()).toMatchObject({ pending: 0, failed: 0 });
  });

  it.each([
    ["a symlink to a file outside the workspace", "link.txt", "outside", /outside the workspace/],
    ["a symlink to the config file", "settings.txt", "picklebot.yaml", /picklebot\.yaml/],
    ["a symlinked folder into history/", "h/picklebot.db", "history", /history/],
  ])("refuses %s before anything is stored or sent", async (_what, path, target, expected) => {
    ws.write("picklebot.yaml", "llm:\n  api_key: secret\n");
    ws.write("history/picklebot.db", "not for the chat");
    const outside = mkdtempSync(join(tmpdir(), "send-file-outside-"));
    writeFileSync(join(outside, "outside.txt"), "secret outside");
    const to = target === "outside" ? join(outside, "outside.txt") : target;
    symlinkSync(to, join(ws.dir, path.split("/")[0] ?? path));
    try {
      const message = await refusal(tool().run({ path }, context()));
      expect(message).toMatch(expected);
      expect(platform.calls).toEqual([]);
      expect(await storage.outbox.summary()).toMatchObject({ pending: 0, failed: 0 });
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("refuses a 60 MB file over Telegram's 50 MB upload limit without reading it, saying the limit", async () => {
    ws.write("film.mp4", "");
    truncateSync(join(ws.dir, "film.mp4"), 60_000_000);
    const message = await refusal(tool().run({ path: "film.mp4" }, context()));
    expect(message).toBe(
      `send_file: "film.mp4" is 60000000 bytes (60.0 MB), over telegram's limit of 50000000 bytes (50.0 MB) per file; send a smaller file (compress or split it)`,
    );
    expect(platform.calls).toEqual([]);
  });

  it("refuses an empty file, saying the platform refuses empty files", async () => {
    ws.write("empty.txt", "");
    const message = await refusal(tool().run({ path: "empty.txt" }, context()));
    expect(message).toBe(`send_file: "empty.txt" is empty; telegram refuses empty files`);
    expect(platform.calls).toEqual([]);
  });

  it("says there is no chat when the job has none", async () => {
    const message = await refusal(tool({ kind: "silent" }).run({ path: "chart.png" }, context()));
    expect(message).toMatch(/this job has no chat to send to; give its cron a deliver_to/);
    const none = await refusal(createSendFileTool(undefined).run({ path: "chart.png" }, context()));
    expect(none).toMatch(/this conversation has no chat to send files to/);
  });
});

describe("send_file in a web chat", () => {
  beforeEach(() => setUp("telegram"));
  const web = () => tool({ kind: "silent" }, "web:pickle:ab12");

  it("stores the file for the session's page once per call, and sends nothing to a chat", async () => {
    const media = new MediaStore(join(ws.dir, "history"));
    expect(await web().run({ path: "chart.png", caption: "a chart" }, context())).toBe(
      "sent chart.png to the web chat; it shows there as a link",
    );
    // The same call again (a resumed job) adds nothing.
    await web().run({ path: "chart.png", caption: "a chart" }, context());
    const sent = await media.sentFiles("s_web");
    expect(sent).toEqual([
      {
        sha256: sha256("\x89PNG image"),
        bytes: Buffer.byteLength("\x89PNG image"),
        name: "chart.png",
        mediaType: "image/png",
        caption: "a chart",
        callId: "toolu_1",
      },
    ]);
    expect((await media.read(sent[0]?.sha256 ?? "")).toString()).toBe("\x89PNG image");
    expect(await media.sentFiles("s_other")).toEqual([]);
    expect(platform.calls).toEqual([]);
  });

  it("refuses an empty file, saying so", async () => {
    ws.write("empty.txt", "");
    expect(await refusal(web().run({ path: "empty.txt" }, context()))).toBe(
      'send_file: "empty.txt" is empty; the web chat refuses empty files',
    );
  });
});

describe("send_file to Discord", () => {
  beforeEach(() => setUp("discord"));

  it("refuses a file over Discord's 25 MiB limit without reading it, saying the limit", async () => {
    ws.write("video.mp4", "");
    truncateSync(join(ws.dir, "video.mp4"), CHAT_PLATFORMS.discord.maxFileBytes + 1);
    const message = await refusal(tool().run({ path: "video.mp4" }, context()));
    expect(message).toBe(
      `send_file: "video.mp4" is 26214401 bytes (26.2 MB), over discord's limit of 26214400 bytes (26.2 MB) per file; send a smaller file (compress or split it)`,
    );
    expect(platform.calls).toEqual([]);
  });
});
