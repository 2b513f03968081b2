/**
 * Files in the dashboard's web chat, end to end: `picklebot server` as a child process on
 * a temp workspace, its model the fake Anthropic API (which refuses the image and document
 * blocks the real one refuses), speech the fake speech-to-text server. An upload in the
 * chat box is read like a Telegram photo; `send_file` in a web chat's job shows a link on
 * the session page that serves the file.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeTranscription, startFakeTranscription } from "../fakes/transcription.js";
import { photo, voiceNote } from "../helpers/media.js";
import { killAllServers, type ServerProcess, startServer } from "../helpers/server.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let model: FakeAnthropic;
let speech: FakeTranscription;
let ws: TempWorkspace;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  speech = await startFakeTranscription();
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(
      model.url,
      `speech_to_text:\n  base_url: ${speech.url}\n  api_key: stt-test-key\n  model: whisper-1\n`,
    ),
    "agents/sender/AGENT.md":
      "---\nname: Sender\ndescription: Sends files\ntools: [send_file]\n---\nYou send files.\n",
  });
});

afterEach(async () => {
  await killAllServers();
  await Promise.all([model.close(), speech.close()]);
  ws.remove();
});

/** The CSRF token a dashboard page carries. */
async function csrfOf(server: ServerProcess): Promise<string> {
  const page = await (await server.fetch("/sessions")).text();
  const token = page.match(/name="_csrf" value="([\w-]+)"/)?.[1];
  if (!token) throw new Error("the sessions page carries no CSRF token");
  return token;
}

/** Starts a web chat with `message` and `files` as the chat box posts them; its session id. */
async function startChat(
  server: ServerProcess,
  message: string,
  files: Array<{ name: string; type: string; bytes: Uint8Array }>,
  agent = "pickle",
): Promise<string> {
  const body = new FormData();
  body.set("_csrf", await csrfOf(server));
  body.set("agent", agent);
  body.set("message", message);
  for (const file of files)
    body.append("file", new File([file.bytes], file.name, { type: file.type }));
  const response = await server.fetch("/sessions/new", {
    method: "POST",
    body,
    redirect: "manual",
  });
  expect(response.status).toBe(303);
  return (response.headers.get("location") ?? "").replace("/sessions/", "");
}

/** Waits for the web chat's job to end done; returns the session page. */
async function answeredPage(server: ServerProcess, sessionId: string): Promise<string> {
  await server.waitForLog(
    (line) => String(line.session).startsWith("web:") && line.outcome === "done",
    20_000,
  );
  return (await server.fetch(`/sessions/${sessionId}`)).text();
}

/** The content blocks of the last user message of the model's last request. */
function lastUserBlocks(): Array<Record<string, unknown>> {
  const message = model.requests
    .at(-1)
    ?.body.messages.filter((m) => m.role === "user")
    .at(-1);
  if (!message || typeof message.content === "string") return [];
  return message.content as Array<Record<string, unknown>>;
}

describe("an upload in the web chat", () => {
  it("a photo with a message reaches the model as an image block and the words; the page shows its thumbnail", async () => {
    const server = await startServer(ws.dir);
    const sessionId = await startChat(server, "what is in this picture?", [
      { name: "garden.jpg", type: "image/jpeg", bytes: await photo(2000, 1000) },
    ]);
    const page = await answeredPage(server, sessionId);
    const [image, words] = lastUserBlocks();
    expect(image).toMatchObject({ type: "image", source: { media_type: "image/jpeg" } });
    const source = image?.source as { data: string } | undefined;
    const sent = Buffer.from(source?.data ?? "", "base64");
    expect((await sharp(sent).metadata()).width).toBe(1568);
    expect(words).toMatchObject({ type: "text", text: "what is in this picture?" });
    expect(page).toContain("echo: what is in this picture?");
    const thumbnail = page.match(/<img class="thumbnail" src="([^"]+)" alt="garden.jpg"/)?.[1];
    expect(thumbnail).toMatch(new RegExp(`^/sessions/${sessionId}/files/[0-9a-f]{64}$`));
    const served = await server.fetch(thumbnail ?? "");
    expect(served.headers.get("content-type")).toBe("image/jpeg");
    expect(Buffer.from(await served.arrayBuffer()).equals(sent)).toBe(true);
  });

  it("a corrupt image gets a notice in the turn, and the words still get their answer", async () => {
    const server = await startServer(ws.dir);
    const broken = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(300, 7)]);
    const sessionId = await startChat(server, "and this one?", [
      { name: "broken.jpg", type: "image/jpeg", bytes: broken },
    ]);
    const page = await answeredPage(server, sessionId);
    // The words are answered; the model reads why the file is missing.
    expect(page).toMatch(/echo: \[The user sent broken\.jpg, [^\]]+\]and this one\?/);
    expect(page).toContain(
      "The user sent broken.jpg, which could not be read: it is not an image I can open (it looks damaged)",
    );
    const logged = server.linesMatching(
      (line) => line.msg === "could not read a file sent in a chat",
    );
    expect(logged).toMatchObject([{ file: "broken.jpg" }]);
    expect(lastUserBlocks().some((block) => block.type === "image")).toBe(false);
  });

  it("an audio file reaches the model as its transcript", async () => {
    const server = await startServer(ws.dir);
    const sessionId = await startChat(server, "", [
      { name: "memo.ogg", type: "audio/ogg", bytes: voiceNote() },
    ]);
    const page = await answeredPage(server, sessionId);
    expect(page).toContain("echo: [Transcription of the audio file memo.ogg]");
    expect(speech.calls).toMatchObject([{ fileName: "memo.ogg", status: 200 }]);
  });
});

describe("send_file in a web chat", () => {
  it("shows the file as a link on the session page, served with its type", async () => {
    const chart = await sharp({
      create: { width: 60, height: 40, channels: 3, background: "#3a7" },
    })
      .png()
      .toBuffer();
    writeFileSync(join(ws.dir, "chart.png"), chart);
    writeFileSync(join(ws.dir, "notes.html"), "<script>alert(1)</script>");
    model.script(
      {
        toolUses: [
          { name: "send_file", input: { path: "chart.png", caption: "your chart" } },
          { name: "send_file", input: { path: "notes.html" } },
        ],
      },
      { text: "Sent both." },
    );
    const server = await startServer(ws.dir);
    const sessionId = await startChat(server, "send me the chart and the notes", [], "sender");
    const page = await answeredPage(server, sessionId);
    expect(page).toContain("Sent both.");
    expect(page).toContain("sent chart.png to the web chat");
    const links = [
      ...page.matchAll(/<a href="(\/sessions\/[^"]+\/files\/[0-9a-f]{64})"[^>]*>([^<]+)<\/a>/g),
    ];
    const byName = new Map(links.map(([, url, name]) => [name, url ?? ""]));
    expect(page).toContain("your chart");
    const png = await server.fetch(byName.get("chart.png") ?? "missing");
    expect(png.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await png.arrayBuffer()).equals(chart)).toBe(true);
    const html = await server.fetch(byName.get("notes.html") ?? "missing");
    expect(html.headers.get("content-type")).toBe("text/html");
    expect(html.headers.get("content-disposition")).toMatch(/^attachment;/);
  });
});
