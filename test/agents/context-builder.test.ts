import { describe, expect, it } from "vitest";
import {
  buildRequestMessages,
  closingMessages,
  prunedMediaNote,
  prunedOutputNote,
  prunePoint,
  STOPPED_NOTE,
  unfinishedToolResult,
} from "../../src/agents/context-builder.js";
import { toChatMessages } from "../../src/agents/providers/openai-messages.js";
import type { ChatMessage, ContentBlock } from "../../src/ports/index.js";
import { cutContext } from "../../src/storage/context.js";
import { refusalOf } from "../fakes/anthropic-rules.js";
import type { FakeChatBody } from "../fakes/openai.js";
import { chatRefusal } from "../fakes/openai-rules.js";

const user = (...content: ContentBlock[]): ChatMessage => ({ role: "user", content });
const assistant = (...content: ContentBlock[]): ChatMessage => ({ role: "assistant", content });
const text = (value: string): ContentBlock => ({ type: "text", text: value });
const call = (id: string): ContentBlock => ({ type: "tool_use", id, name: "read", input: {} });
const result = (id: string): ContentBlock => ({
  type: "tool_result",
  tool_use_id: id,
  content: "done",
});

/** A turn that reads a file of `size` characters: the question, the call, its output, the answer. */
function readingTurn(id: string, size: number): ChatMessage[] {
  const output: ContentBlock = { type: "tool_result", tool_use_id: id, content: "x".repeat(size) };
  return [user(text(`read ${id}`)), assistant(call(id)), user(output), assistant(text("Read."))];
}

describe("buildRequestMessages: images and PDFs", () => {
  const media = { sha256: "a".repeat(64), bytes: 1000, name: "cat.jpg" };
  const image: ContentBlock = {
    type: "image",
    mediaType: "image/jpeg",
    media,
    width: 1568,
    height: 1045,
  };
  const pdf: ContentBlock = {
    type: "document",
    mediaType: "application/pdf",
    media: { ...media, name: "a.pdf" },
    pages: 3,
  };

  it("sends them as they are stored, with the caption", () => {
    const history = [user(image, pdf, text("what is this?"))];
    expect(buildRequestMessages(history)).toEqual(history);
  });

  it("sends an old image or PDF as a note naming it once a prune point leaves its turn behind, like an old tool output", () => {
    const history = [
      user(image, pdf, text("what is this?")),
      assistant(text("A cat and a report.")),
      ...readingTurn("t1", 10),
      prunePoint(1),
      user(image, text("and this one?")),
    ];
    const request = buildRequestMessages(history);
    expect(request[0]?.content).toEqual([
      text(prunedMediaNote(image as never)),
      text(prunedMediaNote(pdf as never)),
      text("what is this?"),
    ]);
    expect(request.at(-1)?.content[0]).toEqual(image);
  });

  it("sends at most 100 images and PDF pages, the newest; older ones as a note, so the API takes the request", () => {
    const small = { ...image, width: 200, height: 200 } as ContentBlock;
    const turns = Array.from({ length: 95 }, (_, index) => [
      user(small, text(`photo ${index}`)),
      assistant(text("Nice.")),
    ]).flat();
    const history = [...turns, user(pdf, pdf, image, text("and these?"))];
    const request = buildRequestMessages(history);
    const blocks = request.flatMap((message) => message.content);
    const images = blocks.filter((block) => block.type === "image").length;
    const pages = blocks.reduce((sum, block) => sum + (block.type === "document" ? 3 : 0), 0);
    expect(images + pages).toBe(100);
    expect(request.at(-1)?.content).toEqual(history.at(-1)?.content);
    expect(request[0]?.content).toEqual([text(prunedMediaNote(small as never)), text("photo 0")]);
  });

  it("sends at most 22 MiB of images and PDFs, the newest; older ones as a note, so the request stays under the API's 32 MB", () => {
    const mib = 1024 * 1024;
    const heavy = (name: string, megabytes: number): ContentBlock => ({
      ...(pdf as Extract<ContentBlock, { type: "document" }>),
      media: { sha256: "b".repeat(64), bytes: megabytes * mib, name },
    });
    const history = [
      user(heavy("old.pdf", 10), text("first")),
      assistant(text("Read.")),
      user(heavy("new.pdf", 15), text("second")),
    ];
    const request = buildRequestMessages(history);
    expect(request[0]?.content).toEqual([
      text(prunedMediaNote(heavy("old.pdf", 10) as never)),
      text("first"),
    ]);
    expect(request.at(-1)?.content).toEqual(history.at(-1)?.content);
  });
});

describe("buildRequestMessages: a prune point", () => {
  const outputsOf = (messages: ChatMessage[]) =>
    messages.flatMap((m) =>
      m.content.flatMap((b) => (b.type === "tool_result" ? [b.content] : [])),
    );

  it("sends the tool outputs of turns before the kept ones as a note, and the point as nothing", () => {
    const history = [
      ...readingTurn("t1", 5000),
      ...readingTurn("t2", 10),
      ...readingTurn("t3", 6000),
      ...readingTurn("t4", 7000),
      prunePoint(2),
      user(text("and now?")),
    ];

    const request = buildRequestMessages(history);

    expect(outputsOf(request)).toEqual([
      prunedOutputNote(5000),
      "x".repeat(10), // shorter than the note: sent as it is
      "x".repeat(6000),
      "x".repeat(7000),
    ]);
    expect(request.at(-1)).toEqual(user(text("and now?")));
    expect(refusalOf(request)).toBeNull();
  });

  it("prunes only before the last point, so later turns keep their outputs until the next one", () => {
    const history = [
      ...readingTurn("t1", 5000),
      prunePoint(0),
      ...readingTurn("t2", 5000),
      ...readingTurn("t3", 5000),
      ...readingTurn("t4", 5000),
      prunePoint(1),
      ...readingTurn("t5", 5000),
    ];

    expect(outputsOf(buildRequestMessages(history))).toEqual([
      prunedOutputNote(5000),
      prunedOutputNote(5000),
      prunedOutputNote(5000),
      "x".repeat(5000),
      "x".repeat(5000),
    ]);
  });
});

describe("buildRequestMessages: a compaction point that keeps the latest turns", () => {
  const point = (keeps?: number): ChatMessage =>
    user({
      type: "compaction",
      summary: "They read t1.",
      replaces: 5,
      ...(keeps ? { keeps } : {}),
    });
  const save: ChatMessage = assistant({ type: "memory_save", calls: [] });
  const stored = [
    user(text("hello")),
    ...readingTurn("t1", 10),
    ...readingTurn("t2", 10),
    save,
    point(5),
    user(text("next")),
  ];

  it("sends the summary first, then the kept turns word for word, then what came after", () => {
    const context = cutContext(stored, 200);
    expect(context).toEqual(stored.slice(5));
    expect(buildRequestMessages(context)).toEqual([
      user(
        text(
          "(Summary of the earlier conversation, which is no longer shown in full:)\nThey read t1.",
        ),
        text("read t2"),
      ),
      assistant(call("t2")),
      user({ type: "tool_result", tool_use_id: "t2", content: "x".repeat(10) }),
      assistant(text("Read.")),
      user(text("next")),
    ]);
  });

  it("is a request both APIs take: it starts with the user, each tool call answered", () => {
    const request = buildRequestMessages(cutContext(stored, 200));
    expect(refusalOf(request)).toBeNull();
    const messages = toChatMessages({ system: "You pickle.", messages: request });
    expect(chatRefusal({ model: "m", messages } as FakeChatBody)).toBeNull();
  });

  it("keeps nothing before a point stored without `keeps` (older data)", () => {
    const context = cutContext([...stored.slice(0, 10), point(), user(text("next"))], 200);
    expect(buildRequestMessages(context)).toEqual([
      user(
        text(
          "(Summary of the earlier conversation, which is no longer shown in full:)\nThey read t1.",
        ),
        text("next"),
      ),
    ]);
  });
});

describe("buildRequestMessages", () => {
  it("leaves a valid history as it is", () => {
    const history = [
      user(text("read a.md")),
      assistant(text("Reading."), call("t1")),
      user(result("t1")),
      assistant(text("It says hi.")),
      user(text("thanks")),
    ];
    expect(buildRequestMessages(history)).toEqual(history);
  });

  it("answers a tool call that never finished, so the next message is not refused", () => {
    const history = [user(text("read a.md")), assistant(call("t1")), user(text("hello?"))];
    expect(refusalOf(history)).toMatch(/tool_use` ids were found without `tool_result`/);

    const request = buildRequestMessages(history);

    expect(request).toEqual([
      user(text("read a.md")),
      assistant(call("t1")),
      user(unfinishedToolResult("t1", "interrupted"), text("hello?")),
    ]);
    expect(refusalOf(request)).toBeNull();
  });

  it("merges two user messages in a row (a turn that failed before the model answered)", () => {
    const request = buildRequestMessages([user(text("first")), user(text("second"))]);
    expect(request).toEqual([user(text("first"), text("second"))]);
  });

  it("sends the next message after a stopped turn as a turn of its own, not with the stopped request", () => {
    const stoppedInCall = [user(text("run both")), assistant(call("t1"), call("t2"))];
    const closedInCall = closingMessages(stoppedInCall.at(-1), "stopped by the user");
    const request = buildRequestMessages([
      ...stoppedInCall,
      ...closedInCall,
      user(text("never mind")),
    ]);
    expect(request.slice(2)).toEqual([
      user(
        unfinishedToolResult("t1", "stopped by the user"),
        unfinishedToolResult("t2", "stopped by the user"),
      ),
      assistant(text(STOPPED_NOTE)),
      user(text("never mind")),
    ]);
    expect(refusalOf(request)).toBeNull();

    const stoppedInText = [user(text("tell me a story"))];
    const closedInText = closingMessages(stoppedInText[0], "stopped by the user", "Once upon");
    expect(
      buildRequestMessages([...stoppedInText, ...closedInText, user(text("a short one"))]),
    ).toEqual([
      user(text("tell me a story")),
      assistant(text(`Once upon\n\n${STOPPED_NOTE}`)),
      user(text("a short one")),
    ]);
  });

  it("drops empty text blocks, empty messages and results that answer no call", () => {
    const request = buildRequestMessages([
      user(text("hi"), text("  ")),
      assistant(text("")),
      assistant(text("hello")),
      user(result("ghost"), text("ok")),
    ]);
    expect(request).toEqual([user(text("hi")), assistant(text("hello")), user(text("ok"))]);
  });

  it("starts with the user", () => {
    expect(buildRequestMessages([assistant(text("left over")), user(text("hi"))])).toEqual([
      user(text("hi")),
    ]);
  });

  it("turns any history ending with a user message into a request the API accepts", () => {
    // A seeded generator (mulberry32), so a failure repeats.
    let seed = 20261124;
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const blocks: Array<() => ContentBlock> = [
      () => text("words"),
      () => text(""),
      () => call(`t${Math.floor(random() * 4)}`),
      () => result(`t${Math.floor(random() * 4)}`),
    ];
    for (let run = 0; run < 2000; run++) {
      const history: ChatMessage[] = Array.from({ length: 1 + Math.floor(random() * 8) }, () => ({
        role: random() < 0.5 ? "user" : "assistant",
        content: Array.from({ length: Math.floor(random() * 3) }, () =>
          (blocks[Math.floor(random() * blocks.length)] as () => ContentBlock)(),
        ),
      }));
      history.push(user(text("now")));
      const request = buildRequestMessages(history);
      expect(refusalOf(request), JSON.stringify(history)).toBeNull();
    }
  });
});

describe("closingMessages", () => {
  it("answers every open call of the last message with an error saying why", () => {
    expect(closingMessages(assistant(text("Reading."), call("t1")), "timed out")).toEqual([
      user({
        type: "tool_result",
        tool_use_id: "t1",
        content: "This tool call did not finish: timed out.",
        is_error: true,
      }),
    ]);
  });

  it("adds nothing when no call is open", () => {
    expect(closingMessages(user(text("hi")), "interrupted")).toEqual([]);
    expect(closingMessages(assistant(text("done")), "interrupted")).toEqual([]);
    expect(closingMessages(undefined, "interrupted")).toEqual([]);
  });

  it("ends a stopped turn with the reply the person saw so far and the stop", () => {
    expect(closingMessages(user(text("hi")), "stopped by the user", "Hel  \n")).toEqual([
      assistant(text(`Hel\n\n${STOPPED_NOTE}`)),
    ]);
    expect(closingMessages(user(text("hi")), "stopped by the user", " ")).toEqual([
      assistant(text(STOPPED_NOTE)),
    ]);
  });

  it("after the open calls of a stopped turn, the stop alone: the text before the calls is stored", () => {
    expect(closingMessages(assistant(text("Reading."), call("t1")), "stopped by the user")).toEqual(
      [user(unfinishedToolResult("t1", "stopped by the user")), assistant(text(STOPPED_NOTE))],
    );
  });

  it("adds nothing to a stopped turn whose reply is stored already, or to an empty session", () => {
    expect(closingMessages(assistant(text("done")), "stopped by the user", "done")).toEqual([]);
    expect(closingMessages(undefined, "stopped by the user", "x")).toEqual([]);
  });
});
