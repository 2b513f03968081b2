#!/usr/bin/env node
// The model adapters' own cost per request, and time to first token, for the Anthropic
// adapter and the OpenAI-compatible one, measured in the same run on the same request:
// a 40-message history (20 turns of text, a tool call and its result) with 12 tools, and
// a streamed reply of 8 text deltas.
//
//   overhead  complete() on a fetch that answers from memory with the bytes the fake
//             API sent for this request (no network, no server): the adapter's
//             conversion both ways plus the SDK's request building and SSE parsing —
//             everything picklebot's process spends on one request. Wall time per call
//             (p50, p95) and CPU time per call (process.cpuUsage over all calls).
//   TTFT      time from complete() to the first text delta, against the fake API on
//             127.0.0.1 (test/fakes/anthropic.ts, test/fakes/openai.ts), warm.
//
// Goal (issue 30): under 2 ms of picklebot's own time per request.
//
// Each adapter is measured twice: on that history, and on it with a photo (a 1568 × 1045
// JPEG, the largest picklebot sends) in its first user message, read from memory by
// `readMedia` and sent as base64 (Anthropic's image block, OpenAI's data URL).
//
// Usage: npm run build && node bench/providers.js [--calls 500]
import { performance } from "node:perf_hooks";
import sharp from "sharp";
import { createAnthropicProvider } from "../dist/agents/providers/anthropic.js";
import { createOpenAiCompatibleProvider } from "../dist/agents/providers/openai-compatible.js";
import { loadFakes } from "./lib/server.js";
import { formatMs, markdownTable, percentile } from "./lib/stats.js";

const REPLY = "Pickles are cucumbers that went on a long and salty adventure in brine.";
const TOOLS = Array.from({ length: 12 }, (_, index) => ({
  name: `tool_${index}`,
  description: `Tool number ${index}: does one thing to a file of the workspace.`,
  input_schema: {
    type: "object",
    properties: { path: { type: "string" }, limit: { type: "integer" } },
    required: ["path"],
  },
}));

/** 20 turns: the user asks, the model calls a tool, the result, the model answers. */
function history() {
  const messages = [];
  for (let turn = 0; turn < 20; turn++) {
    const id = `call_${turn}`;
    messages.push({
      role: "user",
      content: [{ type: "text", text: `Question ${turn}: what is in notes/${turn}.md?` }],
    });
    messages.push({
      role: "assistant",
      content: [
        { type: "text", text: "Let me read it." },
        { type: "tool_use", id, name: "tool_1", input: { path: `notes/${turn}.md` } },
      ],
    });
    messages.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: id, content: `line ${turn}\n`.repeat(20) }],
    });
    messages.push({
      role: "assistant",
      content: [{ type: "text", text: `It lists ${turn} things.` }],
    });
  }
  messages.push({ role: "user", content: [{ type: "text", text: "And pickles?" }] });
  return messages.slice(-41, -1).concat(messages.at(-1));
}

/** The photo's block: a stored 1568 × 1045 JPEG, by its (made-up) SHA-256. */
const PHOTO = {
  type: "image",
  mediaType: "image/jpeg",
  media: { sha256: "f".repeat(64), bytes: 0, name: "photo.jpg" },
  width: 1568,
  height: 1045,
};

/** A 1568 × 1045 JPEG with detail (a camera photo's size after picklebot resizes it). */
async function photoBytes() {
  const { width, height } = PHOTO;
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7 + Math.floor(i / 97)) % 256;
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 85 })
    .toBuffer();
}

function request(onText, withPhoto = false) {
  const messages = history();
  if (withPhoto) messages[0] = { ...messages[0], content: [PHOTO, ...messages[0].content] };
  return {
    model: "bench-model",
    system: "You are Pickle, a helpful assistant. ".repeat(40),
    messages,
    tools: TOOLS,
    maxTokens: 1024,
    currentTime: "Friday 27 November 2026, 21:00",
    onText,
  };
}

/** A fetch that records what `fetch` answered, and one that answers it again from memory. */
function recorder() {
  let recorded;
  return {
    async fetch(url, init) {
      const response = await fetch(url, init);
      const body = new Uint8Array(await response.arrayBuffer());
      recorded = { status: response.status, headers: [...response.headers], body };
      return new Response(body, { status: recorded.status, headers: recorded.headers });
    },
    replay: async () =>
      new Response(recorded.body, { status: recorded.status, headers: recorded.headers }),
  };
}

const ADAPTERS = {
  anthropic: {
    fake: async (fakes) => {
      const fake = await fakes.anthropic.startFakeAnthropic({
        defaultReply: { text: REPLY, chunks: 8 },
      });
      return { fake, url: fake.url };
    },
    make: (url, fetch, readMedia) =>
      createAnthropicProvider({
        readMedia,
        apiKey: "sk-ant-bench",
        baseURL: url,
        maxRetries: 0,
        ...(fetch ? { fetch } : {}),
      }),
  },
  "openai-compatible": {
    fake: async (fakes) => {
      const fake = await fakes.openai.startFakeOpenAi({ defaultReply: { text: REPLY, chunks: 8 } });
      return { fake, url: fake.url };
    },
    make: (url, fetch, readMedia) =>
      createOpenAiCompatibleProvider({
        readMedia,
        apiKey: "sk-bench",
        baseURL: url,
        maxRetries: 0,
        ...(fetch ? { fetch } : {}),
      }),
  },
};

/**
 * Measures one adapter: its overhead from memory, and TTFT against its fake; with the
 * photo in the history when `photo` holds its bytes.
 */
async function measureAdapter(fakes, adapter, calls, photo) {
  const { fake, url } = await adapter.fake(fakes);
  const readMedia = async () => photo ?? new Uint8Array();
  const withPhoto = photo !== undefined;
  const make = (fetch) => adapter.make(url, fetch, readMedia);
  const ask = (onText) => request(onText, withPhoto);
  try {
    const recorded = recorder();
    await make(recorded.fetch).complete(ask());
    const fromMemory = make(recorded.replay);
    for (let i = 0; i < 50; i++) await fromMemory.complete(ask(() => {}));
    const wall = [];
    const cpuBefore = process.cpuUsage();
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await fromMemory.complete(ask(() => {}));
      wall.push(performance.now() - started);
    }
    const cpu = process.cpuUsage(cpuBefore);
    const live = make();
    for (let i = 0; i < 20; i++) await live.complete(ask());
    const firstToken = [];
    const total = [];
    for (let i = 0; i < Math.min(calls, 200); i++) {
      const started = performance.now();
      let first;
      await live.complete(
        ask(() => {
          first ??= performance.now() - started;
        }),
      );
      total.push(performance.now() - started);
      firstToken.push(first);
    }
    return {
      overheadP50: percentile(wall, 50),
      overheadP95: percentile(wall, 95),
      cpuPerCall: (cpu.user + cpu.system) / 1000 / calls,
      ttftP50: percentile(firstToken, 50),
      ttftP95: percentile(firstToken, 95),
      totalP50: percentile(total, 50),
    };
  } finally {
    await fake.close();
  }
}

/** Runs both adapters; resolves the rows and a markdown table. */
export async function runProvidersBench({ calls = 500 } = {}) {
  const fakes = await loadFakes(["anthropic", "openai"]);
  const rows = [];
  const photo = await photoBytes();
  for (const [name, adapter] of Object.entries(ADAPTERS)) {
    rows.push({ name, ...(await measureAdapter(fakes, adapter, calls)) });
    const withPhoto = await measureAdapter(fakes, adapter, calls, photo);
    rows.push({
      name: `${name}, a ${Math.round(photo.length / 1024)} KiB photo in the history`,
      ...withPhoto,
    });
  }
  const markdown = markdownTable(
    [
      "adapter",
      "own time per request, p50 / p95 (wall, from memory)",
      "CPU per request",
      "TTFT vs fake, p50 / p95",
      "whole reply vs fake, p50",
    ],
    rows.map((row) => [
      row.name,
      `${formatMs(row.overheadP50)} / ${formatMs(row.overheadP95)}`,
      formatMs(row.cpuPerCall),
      `${formatMs(row.ttftP50)} / ${formatMs(row.ttftP95)}`,
      formatMs(row.totalP50),
    ]),
  );
  return { rows, markdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf("--calls");
  const calls = at >= 0 ? Number(process.argv[at + 1]) : 500;
  const { markdown } = await runProvidersBench({ calls });
  console.log(markdown);
}
