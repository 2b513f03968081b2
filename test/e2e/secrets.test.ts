/**
 * Secrets out of reach, end to end: `picklebot server` as a child process whose API key
 * and bot token come only from the workspace's `.env`, chatting on the fake Telegram with
 * the fake Anthropic API as the model. A tool prints the token (`read` of a file holding
 * it, `bash` printing it raw and in base64), and the model quotes it in `post_message`
 * and in its streamed reply: the chat, the stored history (every byte of `history/`), the
 * model's requests and the server's log never hold it, and `bash` does not inherit `.env`.
 * A secret the person types into a chat (Telegram, the web chat) is replaced before the
 * message is queued: no byte of `history/` and no request to the model holds it.
 */
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { REDACTED } from "../../src/base/redact.js";
import {
  type FakeAnthropic,
  lastUserText,
  type RecordedRequest,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { startBusServer } from "../helpers/bus.js";
import { killAllServers } from "../helpers/server.js";
import { filesUnder, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;
const TOKEN = "555000111:AAF-e2e-secret-bot-token";
const API_KEY = "sk-ant-e2e-secret-api-key-0123456789";

let model: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;

beforeEach(async () => {
  model = await startFakeAnthropic();
  telegram = await startFakeTelegram({ token: TOKEN });
  ws = makeWorkspace({
    // Names that bash's own filter of secret-looking variables would not catch.
    ".env": `PB_CHAT_CREDENTIAL=${TOKEN}\nPB_MODEL_CREDENTIAL=${API_KEY}\n`,
    "picklebot.yaml": [
      "llm:",
      `  api_key: \${PB_MODEL_CREDENTIAL}`,
      `  base_url: ${model.url}`,
      "  timeout_s: 20",
      "http:",
      "  port: 0",
      "telegram:",
      "  enabled: true",
      `  bot_token: \${PB_CHAT_CREDENTIAL}`,
      `  api_root: ${telegram.apiRoot}`,
      `  allowed_user_ids: [${OWNER}]`,
      "",
    ].join("\n"),
    "agents/pickle/AGENT.md":
      "---\nname: Pickle\ndescription: Leaks\ntools: [read, bash, post_message]\n---\nYou help.\n",
    "notes/token.txt": `the bot token is ${TOKEN}\n`,
  });
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await model.close();
  ws.remove();
});

describe("secrets from .env", () => {
  it("never reach the chat, history, the model's requests or the log; bash does not inherit them", async () => {
    model.script(
      {
        toolUses: [
          { name: "read", input: { path: "notes/token.txt" } },
          { name: "bash", input: { command: "cat notes/token.txt | base64; env" } },
        ],
      },
      { toolUses: [{ name: "post_message", input: { text: `Found it: ${TOKEN}` } }] },
      { text: `Your token is ${TOKEN}, your key ${API_KEY}.`, chunks: 15, chunkDelayMs: 20 },
    );
    const server = await startBusServer(ws.dir, ["telegram"], {
      env: { PICKLEBOT_LOG_LEVEL: "debug" },
    });
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "what is my token?" });
    await telegram.waitFor(
      () => telegram.messages(OWNER).at(-1) === `Your token is ${REDACTED}, your key ${REDACTED}.`,
      15_000,
    );
    expect(telegram.messages(OWNER)).toEqual([
      `Found it: ${REDACTED}`,
      `Your token is ${REDACTED}, your key ${REDACTED}.`,
    ]);
    await server.waitForLog((line) => line.outcome === "done");
    const bashResult = JSON.stringify(model.requests[1]?.body.messages.at(-1));

    const base64Token = Buffer.from(TOKEN).toString("base64").slice(0, 16);
    const seen = {
      chat: JSON.stringify(telegram.sent.map((call) => call.params)),
      history: filesUnder(path.join(ws.dir, "history")),
      requests: JSON.stringify(model.requests.map((request) => request.body)),
      log: server.transcript(),
    };
    for (const [where, text] of Object.entries(seen)) {
      for (const secret of [TOKEN, API_KEY, base64Token]) {
        expect(text.includes(secret), `${where} holds ${secret}`).toBe(false);
      }
    }
    expect(seen.history).toContain(REDACTED);
    expect(bashResult).toContain("PATH=");
    expect(bashResult).not.toContain("PB_CHAT_CREDENTIAL");
    expect(bashResult).not.toContain("PB_MODEL_CREDENTIAL");
  });
});

describe("secrets typed into a chat", () => {
  it("are replaced before the message is queued, stored or sent to the model: Telegram and the web chat", async () => {
    const echo = (request: RecordedRequest) => ({ text: `you said: ${lastUserText(request)}` });
    model.script(echo, echo);
    const server = await startBusServer(ws.dir, ["telegram"]);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: `my token: ${TOKEN}, keep it` });
    await telegram.waitFor(
      () => telegram.messages(OWNER).at(-1) === `you said: my token: ${REDACTED}, keep it`,
      15_000,
    );

    const sessions = await (await server.fetch("/sessions")).text();
    const csrf = sessions.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
    const message = `and the key: ${API_KEY}`;
    const body = new URLSearchParams({ _csrf: csrf, agent: "pickle", message });
    const sent = await server.fetch("/sessions/new", {
      method: "POST",
      body,
      redirect: "manual",
    });
    expect(sent.status).toBe(303);
    await server.waitForLog(
      (line) => line.outcome === "done" && String(line.session).startsWith("web:"),
      15_000,
    );

    const requests = JSON.stringify(model.requests.map((request) => request.body));
    expect(requests).toContain(`my token: ${REDACTED}, keep it`);
    expect(requests).toContain(`and the key: ${REDACTED}`);
    const history = filesUnder(path.join(ws.dir, "history"));
    for (const secret of [TOKEN, API_KEY]) {
      expect(requests.includes(secret), `the model's requests hold ${secret}`).toBe(false);
      expect(history.includes(secret), `history/ holds ${secret}`).toBe(false);
    }
  });
});
