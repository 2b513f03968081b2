import { describe, expect, it } from "vitest";
import {
  buildTranscript,
  entryText,
  TRANSCRIPT_RESULT_CHARS,
  turnOfJob,
} from "../../src/agents/transcript.js";
import type { Session, StoredMessage, UsageRecord } from "../../src/ports/index.js";

const session: Session = {
  id: "s_1",
  key: "telegram:42",
  agentId: "pickle",
  title: "notes?",
  createdAt: 1_000,
  updatedAt: 9_000,
  messageCount: 6,
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  model: null,
};

function call(at: number, input: number, output: number): UsageRecord {
  return {
    at,
    agentId: "pickle",
    sessionId: "s_1",
    sessionKey: "telegram:42",
    jobId: "j_1",
    model: "claude-test",
    batch: false,
    input,
    output,
    cacheRead: 0,
    cacheWrite: 0,
  };
}

const longResult = "x".repeat(TRANSCRIPT_RESULT_CHARS + 100);
const messages: StoredMessage[] = [
  {
    role: "user",
    at: 1_000,
    jobId: null,
    content: [{ type: "compaction", summary: "Earlier: talked about brine.", replaces: 8 }],
  },
  { role: "user", at: 2_000, jobId: "j_1", content: [{ type: "text", text: "notes?" }] },
  {
    role: "assistant",
    at: 3_000,
    jobId: null,
    content: [
      { type: "text", text: "Reading." },
      { type: "tool_use", id: "t1", name: "read", input: { path: "notes.md" } },
    ],
  },
  {
    role: "user",
    at: 4_000,
    jobId: null,
    content: [{ type: "tool_result", tool_use_id: "t1", content: longResult }],
  },
  { role: "assistant", at: 5_000, jobId: null, content: [{ type: "text", text: "Pickles." }] },
];

describe("buildTranscript: the memory save before a summary", () => {
  it("is an entry of its own with the calls' inputs and the save call's tokens, before the summary", () => {
    const saved = { action: "add", about: "person", text: "Ana's dentist is on Tuesday." };
    const transcript = buildTranscript(
      session,
      [
        {
          role: "assistant",
          at: 500,
          jobId: null,
          content: [
            {
              type: "memory_save",
              calls: [{ type: "tool_use", id: "toolu_s1", name: "memory", input: saved }],
            },
          ],
        },
        ...messages,
      ],
      [call(500, 70, 12), call(1_000, 50, 10)],
    );
    expect(transcript.entries.slice(0, 2)).toMatchObject([
      {
        kind: "memory_save",
        inputs: [saved],
        call: { model: "claude-test", usage: { input: 70, output: 12 } },
      },
      { kind: "compaction", call: { usage: { input: 50, output: 10 } } },
    ]);
  });
});

describe("buildTranscript", () => {
  const transcript = buildTranscript(session, messages, [
    call(1_000, 50, 10),
    call(3_000, 100, 20),
    call(5_000, 130, 5),
  ]);

  it("marks the compaction summary, with the call that wrote it", () => {
    expect(transcript.entries[0]).toMatchObject({
      kind: "compaction",
      summary: "Earlier: talked about brine.",
      replaces: 8,
      call: { model: "claude-test", usage: { input: 50, output: 10 } },
    });
  });

  it("answers each tool call with its result, shortened, and gives each reply its tokens", () => {
    expect(transcript.entries.slice(1)).toMatchObject([
      { kind: "user", text: "notes?", jobId: "j_1", at: 2_000 },
      {
        kind: "assistant",
        text: "Reading.",
        jobId: "j_1",
        toolCalls: [
          {
            name: "read",
            input: { path: "notes.md" },
            result: `${"x".repeat(TRANSCRIPT_RESULT_CHARS)}…`,
            resultChars: longResult.length,
            isError: false,
          },
        ],
        call: { usage: { input: 100, output: 20 } },
      },
      { kind: "assistant", text: "Pickles.", jobId: "j_1", call: { usage: { input: 130 } } },
    ]);
    expect(transcript.totals).toEqual({
      calls: 3,
      usage: { input: 280, output: 35, cacheRead: 0, cacheWrite: 0 },
    });
  });

  it("finds what a job asked and the final text it replied", () => {
    expect(turnOfJob(transcript, "j_1")).toEqual({ message: "notes?", reply: "Pickles." });
    expect(turnOfJob(transcript, "j_other")).toEqual({ message: null, reply: null });
  });

  it("shows a tool call still waiting for its result", () => {
    const open = buildTranscript(session, messages.slice(1, 3), []);
    expect(open.entries[1]).toMatchObject({
      kind: "assistant",
      call: null,
      toolCalls: [{ result: null }],
    });
  });
});

describe("a web search the model API ran", () => {
  it("shows as a web_search call answered in the same message, with what it found", () => {
    const raw = { type: "server_tool_use" };
    const searched: StoredMessage[] = [
      { role: "user", at: 1_000, jobId: "j_1", content: [{ type: "text", text: "pool?" }] },
      {
        role: "assistant",
        at: 2_000,
        jobId: null,
        content: [
          {
            type: "server_tool_use",
            id: "srv_1",
            name: "web_search",
            input: { query: "pool hours" },
            provider: "anthropic",
            raw,
          },
          {
            type: "server_tool_result",
            tool_use_id: "srv_1",
            content: "Pool https://pool.example/",
            provider: "anthropic",
            raw,
          },
          { type: "text", text: "It opens at 7." },
        ],
      },
    ];
    const transcript = buildTranscript(session, searched, []);
    expect(transcript.entries[1]).toMatchObject({
      kind: "assistant",
      text: "It opens at 7.",
      toolCalls: [
        {
          name: "web_search",
          input: { query: "pool hours" },
          result: "Pool https://pool.example/",
          isError: false,
        },
      ],
    });
  });
});

describe("the files of a transcript", () => {
  const image = {
    type: "image" as const,
    mediaType: "image/jpeg" as const,
    media: { sha256: "a".repeat(64), bytes: 245_100, name: "garden.jpg" },
    width: 1568,
    height: 1045,
  };
  const document = {
    type: "document" as const,
    mediaType: "application/pdf" as const,
    media: { sha256: "b".repeat(64), bytes: 1_200_000, name: "report.pdf" },
    pages: 3,
  };
  const sent: StoredMessage[] = [
    { role: "user", at: 1_000, jobId: "j_1", content: [image, document] },
    { role: "assistant", at: 2_000, jobId: null, content: [{ type: "text", text: "A garden." }] },
  ];

  it("keeps a message of files only, its images and PDFs apart from its words", () => {
    const [user] = buildTranscript(session, sent, []).entries;
    expect(user).toMatchObject({ kind: "user", text: "", files: [image, document] });
  });

  it("names each file with its type and size where text is shown (sessions show, jobs)", () => {
    const user = buildTranscript(session, sent, []).entries[0];
    if (user?.kind !== "user") throw new Error("no user entry");
    expect(entryText(user)).toBe(
      "[image garden.jpg, image/jpeg, 245.1 kB, 1568×1045 px]\n[PDF report.pdf, application/pdf, 1.2 MB, 3 pages]",
    );
    expect(turnOfJob(buildTranscript(session, sent, []), "j_1").message).toBe(entryText(user));
  });
});
