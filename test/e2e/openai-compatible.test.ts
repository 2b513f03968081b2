/**
 * An agent on `llm.provider: openai-compatible`: `picklebot chat`, `sessions`, `usage`,
 * `doctor` and the dashboard of `picklebot server`, as child processes on a temp
 * workspace, against the fake OpenAI-compatible API on 127.0.0.1 (a local server: no key,
 * free unless `llm.prices` prices it).
 */

import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeOpenAi, type RecordedChatRequest, startFakeOpenAi } from "../fakes/openai.js";
import { startFakeTelegram } from "../fakes/telegram.js";
import { startBusServer, telegramYaml } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { photo } from "../helpers/media.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const MODEL = "qwen2.5:7b";

let fake: FakeOpenAi;
let ws: TempWorkspace;

/** picklebot.yaml for the fake, with `llm` lines added. */
function config(extra = ""): string {
  return `llm:\n  provider: openai-compatible\n  base_url: ${fake.url}\n  model: "${MODEL}"\n  timeout_s: 20\n${extra}http:\n  port: 0\ntimezone: UTC\n`;
}

beforeEach(async () => {
  fake = await startFakeOpenAi({ models: [{ id: MODEL, contextLength: 16_384 }] });
  ws = makeWorkspace({
    "picklebot.yaml": config(),
    "notes/a.md": "alpha pickles\n",
    "notes/b.md": "beta brine\n",
  });
});

afterEach(async () => {
  await killAllServers();
  await fake.close();
  ws.remove();
});

const cli = (...args: string[]) => runCli([...args, "--workspace", ws.dir]);

/** The content of the tool messages of a request, by tool call id. */
function toolResults(request: RecordedChatRequest | undefined): Record<string, string> {
  const results: Record<string, string> = {};
  for (const message of request?.body.messages ?? []) {
    if (message.role === "tool") results[String(message.tool_call_id)] = String(message.content);
  }
  return results;
}

describe("an agent on an OpenAI-compatible endpoint", () => {
  it("completes a streamed turn with two parallel tool calls; the transcript and the ledger name the model and its cost", async () => {
    ws.write(
      "picklebot.yaml",
      config(`  prices:\n    "${MODEL}": {input: 1, output: 2, cache_read: 0.5, cache_write: 0}\n`),
    );
    fake.script(
      {
        text: "Reading both.",
        toolCalls: [
          { id: "call_a", name: "read", input: { path: "notes/a.md" } },
          { id: "call_b", name: "read", input: { path: "notes/b.md" } },
        ],
        usage: { prompt_tokens: 1000, completion_tokens: 100, cached_tokens: 400 },
      },
      (request) => ({
        text: `a says ${toolResults(request).call_a?.includes("alpha pickles") ? "alpha" : "?"}, b says ${toolResults(request).call_b?.includes("beta brine") ? "beta" : "?"}.`,
        usage: { prompt_tokens: 2000, completion_tokens: 50, cached_tokens: 1000 },
      }),
    );

    const chat = await runCli(["chat", "--workspace", ws.dir], { input: "compare a and b\n" });

    expect(chat.stdout).toBe("a says alpha, b says beta.\n");
    expect(chat.code).toBe(0);
    expect(fake.refused).toEqual([]);
    expect(fake.requests.every((request) => request.body.stream === true)).toBe(true);
    expect(fake.requests[0]?.headers.authorization).toBeUndefined();
    const usage = JSON.parse((await cli("usage", "--json")).stdout) as {
      total: { calls: number; input: number; output: number; cacheRead: number; costUsd: number };
      unpriced: string[];
    };
    // $1 input, $2 output, $0.50 cache read per million tokens.
    const cost = (1600 * 1 + 150 * 2 + 1400 * 0.5) / 1e6;
    expect(usage.total).toMatchObject({ calls: 2, input: 1600, output: 150, cacheRead: 1400 });
    expect(usage.total.costUsd).toBeCloseTo(cost, 10);
    expect(usage.unpriced).toEqual([]);
    const [session] = JSON.parse((await cli("sessions", "--json")).stdout) as Array<{
      id: string;
      context: { window: number };
    }>;
    expect(session?.context.window).toBe(16_384);
    const transcript = await cli("sessions", "show", session?.id ?? "");
    expect(transcript.stdout).toContain(
      `assistant · ${MODEL} · 600 in / 100 out tokens (cache 400 read, 0 written)`,
    );
    expect(transcript.stdout).toContain('→ tool read {"path":"notes/a.md"}');
    expect(transcript.stdout).toContain('→ tool read {"path":"notes/b.md"}');
    const server = await startServer(ws.dir);
    const page = await (await server.fetch(`/sessions/${session?.id}`)).text();
    expect(page).toContain(MODEL);
    const usagePage = await (await server.fetch("/usage")).text();
    expect(usagePage).toContain(`$${cost.toFixed(4)}`);
    // A local server needs no key: the server does not warn of a missing one.
    expect(server.logs.map((line) => line.msg)).not.toContainEqual(
      expect.stringMatching(/^no model API key/),
    );
  });

  it("counts a model on a local server as free, not as unpriced", async () => {
    fake.script({ text: "Hi.", usage: { prompt_tokens: 500, completion_tokens: 5 } });

    expect((await runCli(["chat", "--workspace", ws.dir], { input: "hi\n" })).code).toBe(0);

    const usage = JSON.parse((await cli("usage", "--json")).stdout) as {
      total: { calls: number; costUsd: number };
      unpriced: string[];
    };
    expect(usage).toMatchObject({ total: { calls: 1, costUsd: 0 }, unpriced: [] });
  });

  it("turns tool calls that the model wrote as text into calls", async () => {
    fake.script(
      { text: '<tool_call>{"name": "read", "arguments": {"path": "notes/a.md"}}</tool_call>' },
      (request) => ({ text: `It says: ${Object.values(toolResults(request))[0]?.trim()}` }),
    );

    const chat = await runCli(["chat", "--workspace", ws.dir], { input: "read a\n" });

    expect(chat.stdout).toBe("It says: alpha pickles\n");
    expect(chat.stdout).not.toContain("tool_call");
  });
});

describe("a photo sent from Telegram to an agent on an OpenAI-compatible endpoint", () => {
  const OWNER = 4242;

  it("is in the history of a later streamed turn with two parallel tool calls, as a data URL the API takes", async () => {
    const telegram = await startFakeTelegram();
    try {
      ws.write("picklebot.yaml", config() + telegramYaml(telegram, { allowedUserIds: [OWNER] }));
      fake.script(
        { text: "A pickle jar." },
        {
          text: "Reading both.",
          toolCalls: [
            { id: "call_a", name: "read", input: { path: "notes/a.md" } },
            { id: "call_b", name: "read", input: { path: "notes/b.md" } },
          ],
        },
        (request) => ({
          text: `a: ${toolResults(request).call_a?.trim()}, b: ${toolResults(request).call_b?.trim()}`,
        }),
      );
      await startBusServer(ws.dir, ["telegram"]);
      const bytes = await photo(400, 300);

      telegram.sendUserFile({
        chatId: OWNER,
        userId: OWNER,
        kind: "photo",
        bytes,
        caption: "what is this?",
      });
      await telegram.waitFor(() => telegram.messages(OWNER).length === 1, 20_000);
      telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "compare a and b" });
      const answered = () => telegram.messages(OWNER).includes("a: alpha pickles, b: beta brine");
      await telegram.waitFor(answered, 20_000);

      expect(telegram.messages(OWNER)[0]).toBe("A pickle jar.");
      expect(fake.refused).toEqual([]);
      expect(fake.requests).toHaveLength(3);
      for (const request of fake.requests) {
        expect(request.body.stream).toBe(true);
        const [image, caption] = imageTurnParts(request);
        expect(image?.type).toBe("image_url");
        const url = String((image?.image_url as { url?: string } | undefined)?.url);
        expect(url.startsWith("data:image/jpeg;base64,")).toBe(true);
        const sent = await sharp(Buffer.from(url.split(",")[1] ?? "", "base64")).metadata();
        expect([sent.format, sent.width, sent.height]).toEqual(["jpeg", 400, 300]);
        expect(caption).toEqual({ type: "text", text: "what is this?" });
      }
    } finally {
      await killAllServers();
      await telegram.close();
    }
  });
});

describe("named models on other endpoints: doctor and missing keys, per entry", () => {
  it("doctor names picklebot.yaml models.<name>.model for a model the endpoint does not list, and tells an endpoint that is a web page or unreachable", async () => {
    const gone = await startFakeOpenAi();
    await gone.close();
    ws.write(
      "picklebot.yaml",
      config().replace(
        "\nhttp:",
        `\nmodels:\n  wrong:\n    model: llama3.3\n  site:\n    model: "${MODEL}"\n    base_url: ${fake.root}\n  gone:\n    model: "${MODEL}"\n    base_url: ${gone.url}\nhttp:`,
      ),
    );

    const doctor = await cli("doctor");

    expect(doctor.code).toBe(1);
    const line = doctor.stdout.split("\n").find((text) => text.includes("model key")) ?? "";
    expect(line).toContain(
      `default: no key (a local server needs none); ${fake.url} lists ${MODEL}`,
    );
    expect(line).toContain(
      `wrong: in picklebot.yaml, models.wrong.model llama3.3 is not in the endpoint's /v1/models list (it lists ${MODEL})`,
    );
    expect(line).toContain(
      `site: ${fake.root}/models answered with a web page, not the OpenAI API`,
    );
    expect(line).toMatch(
      /gone: cannot reach the model endpoint http:\/\/127\.0\.0\.1:\d+\/v1: fetch failed \(connect ECONNREFUSED/,
    );
  });

  it("an anthropic entry without a key: doctor, the server's start and a chat name picklebot.yaml models.<name>.api_key and ANTHROPIC_API_KEY; the variable is its key", async () => {
    const anthropic = await startFakeAnthropic({ apiKey: "sk-ant-entry-key" });
    try {
      ws.write(
        "picklebot.yaml",
        config().replace(
          "\nhttp:",
          `\nmodels:\n  claude:\n    provider: anthropic\n    model: claude-haiku-4-5\n    base_url: ${anthropic.url}\nhttp:`,
        ),
      );
      ws.write(
        "agents/pickle/AGENT.md",
        "---\nname: Pickle\ndescription: x\nmodel: claude\n---\nYou are Pickle.\n",
      );

      const doctor = await cli("doctor", "--offline");
      expect(doctor.stdout).toContain(
        "claude: no Anthropic API key: picklebot.yaml models.claude.api_key is unset and ANTHROPIC_API_KEY is not in the environment",
      );
      const chat = await runCli(["chat", "--workspace", ws.dir], { input: "hi\n" });
      expect(chat.stderr).toContain(
        "No Anthropic API key: set ANTHROPIC_API_KEY in the environment or models.claude.api_key in picklebot.yaml.",
      );
      const server = await startServer(ws.dir);
      expect(server.logs.map((entry) => entry.msg)).toContainEqual(
        "no model API key for models.claude: set ANTHROPIC_API_KEY (or models.claude.api_key in picklebot.yaml); its jobs fail until one is set",
      );
      await killAllServers();

      const env = { ANTHROPIC_API_KEY: "sk-ant-entry-key" };
      const keyed = await runCli(["doctor", "--workspace", ws.dir], { env });
      expect(keyed.stdout).toContain(
        `claude: accepted by ${anthropic.url}, which knows claude-haiku-4-5`,
      );
      const answered = await runCli(["chat", "--workspace", ws.dir], { input: "hi\n", env });
      expect(answered.stdout).toBe("ok\n");
    } finally {
      await anthropic.close();
    }
  });

  it("a hosted openai-compatible entry without a key: doctor and a chat name picklebot.yaml models.<name>.api_key", async () => {
    ws.write(
      "picklebot.yaml",
      config().replace(
        "\nhttp:",
        "\nmodels:\n  router:\n    model: meta-llama/llama-3.3-70b-instruct\n    base_url: https://openrouter.ai/api/v1\nhttp:",
      ),
    );
    ws.write(
      "agents/pickle/AGENT.md",
      "---\nname: Pickle\ndescription: x\nmodel: router\n---\nYou are Pickle.\n",
    );

    const doctor = await cli("doctor", "--offline");
    expect(doctor.stdout).toContain(
      "router: no API key for the hosted endpoint https://openrouter.ai/api/v1: picklebot.yaml models.router.api_key is unset",
    );
    const chat = await runCli(["chat", "--workspace", ws.dir], { input: "hi\n" });
    expect(chat.stderr).toContain("set models.router.api_key in picklebot.yaml");
    expect(fake.requests).toHaveLength(0);
  });
});

/** The content parts of the first user message of a request: the photo's turn. */
function imageTurnParts(request: RecordedChatRequest): Array<Record<string, unknown>> {
  const first = request.body.messages.find((message) => message.role === "user");
  return Array.isArray(first?.content) ? first.content : [];
}

describe("bad input on an OpenAI-compatible endpoint", () => {
  it("names the file and key of an unknown provider, with the ones there are", async () => {
    ws.write("picklebot.yaml", config().replace("openai-compatible", "openai"));

    const result = await cli("status");

    expect(result.code).toBe(1);
    expect(result.stderr).toContain("picklebot.yaml");
    expect(result.stderr).toContain("llm.provider");
    expect(result.stderr).toContain('"openai-compatible"');
  });

  it("names llm.base_url when it is not a URL", async () => {
    ws.write("picklebot.yaml", config().replace(fake.url, "localhost:11434"));

    const result = await cli("status");

    expect(result.code).toBe(1);
    expect(result.stderr).toContain("llm.base_url");
    expect(result.stderr).toContain("http:// or https:// URL");
  });

  it("tells of a hosted endpoint without a key in the chat, naming llm.api_key, without sending anything", async () => {
    ws.write("picklebot.yaml", config().replace(fake.url, "https://openrouter.ai/api/v1"));

    const chat = await runCli(["chat", "--workspace", ws.dir], { input: "hi\n" });

    expect(chat.stderr).toContain("No API key for the model endpoint https://openrouter.ai/api/v1");
    expect(chat.stderr).toContain("set llm.api_key in picklebot.yaml");
  });

  it("tells of a base URL without /v1 (a web page answers) in the chat, naming llm.base_url", async () => {
    ws.write("picklebot.yaml", config().replace(fake.url, fake.root));

    const chat = await runCli(["chat", "--workspace", ws.dir], { input: "hi\n" });

    expect(chat.stderr).toContain("answered with a web page");
    expect(chat.stderr).toContain("llm.base_url");
  });

  it("tells of a context-length refusal, naming llm.context_window", async () => {
    await fake.close();
    fake = await startFakeOpenAi({ models: [{ id: MODEL }], promptTokenLimit: 600 });
    ws.write("picklebot.yaml", config("  max_tokens: 100\n"));

    const chat = await runCli(["chat", "--workspace", ws.dir], {
      input: `${"pickle ".repeat(800)}\n`,
    });

    expect(chat.stderr).toContain("maximum context length is 600 tokens");
    expect(chat.stderr).toContain("llm.context_window");
  });

  it("doctor: a hosted endpoint without a key, a model the endpoint does not list, and what is off", async () => {
    ws.write("picklebot.yaml", config().replace(fake.url, "https://openrouter.ai/api/v1"));
    const hosted = await cli("doctor", "--offline");
    expect(hosted.stdout).toMatch(
      /FAIL\s+model key\s+no API key for the hosted endpoint https:\/\/openrouter\.ai\/api\/v1/,
    );
    expect(hosted.stdout).toContain("llm.api_key");

    ws.write("picklebot.yaml", config().replace(`model: "${MODEL}"`, 'model: "llama3.3"'));
    const unlisted = await cli("doctor");
    expect(unlisted.stdout).toContain(
      `llm.model llama3.3 is not in the endpoint's /v1/models list (it lists ${MODEL})`,
    );
    expect(unlisted.stdout).toMatch(
      /model features\s+openai-compatible turns off what only Anthropic's API has: prompt-cache breakpoints/,
    );

    ws.write("picklebot.yaml", config());
    ws.write("crons/nightly.yaml", 'schedule: "0 3 * * *"\nprompt: Sum up.\nbatch: true\n');
    const doctor = await cli("doctor");
    expect(doctor.stdout).toMatch(
      /WARN\s+crons\s+nightly set batch: true, but llm.provider openai-compatible has no batch API: they run as normal calls, at the full price/,
    );
    expect(doctor.stdout).toMatch(
      /ok\s+model key\s+no key \(a local server needs none\); .* lists qwen2\.5:7b/,
    );
  });
});
