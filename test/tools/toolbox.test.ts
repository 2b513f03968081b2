import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createToolbox, runToolCalls, summarizeToolCall } from "../../src/agents/tools/index.js";
import { UserError } from "../../src/base/errors.js";
import type { Tool, ToolUseBlock } from "../../src/ports/index.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

let temp: TempWorkspace;
beforeEach(() => {
  temp = createTempWorkspace();
});
afterEach(() => temp.remove());

function call(id: string, name: string, input: unknown): ToolUseBlock {
  return { type: "tool_use", id, name, input };
}

const postMessage: Tool = {
  spec: { name: "post_message", description: "Post", input_schema: { type: "object" } },
  run: async () => "posted",
};

describe("createToolbox", () => {
  it("returns the named tools in order, with their JSON input schemas", () => {
    const tools = createToolbox(["web_fetch", "read", "write", "edit", "bash"]);
    expect(tools.map((tool) => tool.spec.name)).toEqual([
      "web_fetch",
      "read",
      "write",
      "edit",
      "bash",
    ]);
    expect(tools[3]?.spec.input_schema).toMatchObject({
      type: "object",
      required: ["path", "old_text", "new_text"],
      properties: { old_text: { type: "string" } },
    });
  });

  it("includes extra tools by name", () => {
    const tools = createToolbox(["read", "post_message"], { extraTools: [postMessage] });
    expect(tools.map((tool) => tool.spec.name)).toEqual(["read", "post_message"]);
    expect(tools[1]).toBe(postMessage);
  });

  it("refuses an unknown tool name, listing the known ones", () => {
    expect(() => createToolbox(["read", "shell"])).toThrow(UserError);
    expect(() => createToolbox(["shell"])).toThrow(
      'unknown tool "shell"; use one of: read, write, edit, bash, web_fetch',
    );
  });
});

describe("runToolCalls", () => {
  it("runs calls concurrently: two commands that wait for each other both finish", async () => {
    const tools = createToolbox(["bash"], { bashTimeoutMs: 20_000 });
    const waitFor = (mine: string, theirs: string) =>
      `touch ${mine}; while [ ! -f ${theirs} ]; do sleep 0.01; done; echo ${mine} saw ${theirs}`;
    const results = await runToolCalls(
      tools,
      [
        call("t1", "bash", { command: waitFor("a", "b") }),
        call("t2", "bash", { command: waitFor("b", "a") }),
      ],
      temp.context(),
    );
    expect(results).toEqual([
      { type: "tool_result", tool_use_id: "t1", content: "a saw b" },
      { type: "tool_result", tool_use_id: "t2", content: "b saw a" },
    ]);
  });

  it("turns failures and unknown tools into is_error results, in call order", async () => {
    const tools = createToolbox(["read", "write"]);
    const results = await runToolCalls(
      tools,
      [
        call("t1", "read", { path: "missing.md" }),
        call("t2", "write", { path: "ok.md", content: "fine" }),
        call("t3", "bash", { command: "ls" }),
        call("t4", "write", { path: "x.md" }),
      ],
      temp.context(),
    );
    expect(results).toEqual([
      {
        type: "tool_result",
        tool_use_id: "t1",
        content: '"missing.md" does not exist',
        is_error: true,
      },
      { type: "tool_result", tool_use_id: "t2", content: "wrote 4 bytes to ok.md" },
      {
        type: "tool_result",
        tool_use_id: "t3",
        content: `unknown tool "bash"; this agent's tools are: read, write`,
        is_error: true,
      },
      {
        type: "tool_result",
        tool_use_id: "t4",
        content: 'write: "content" must be a string (it is missing)',
        is_error: true,
      },
    ]);
    expect(readFileSync(join(temp.workspace, "ok.md"), "utf8")).toBe("fine");
  });

  it("never throws, whatever a tool throws", async () => {
    const throwsString: Tool = {
      spec: { name: "odd", description: "Odd", input_schema: { type: "object" } },
      run: () => Promise.reject("plain string"),
    };
    const empty: Tool = {
      spec: { name: "quiet", description: "Quiet", input_schema: { type: "object" } },
      run: async () => "",
    };
    const results = await runToolCalls(
      [throwsString, empty],
      [call("t1", "odd", {}), call("t2", "quiet", {})],
      temp.context(),
    );
    expect(results).toEqual([
      { type: "tool_result", tool_use_id: "t1", content: "plain string", is_error: true },
      { type: "tool_result", tool_use_id: "t2", content: "(no output)" },
    ]);
  });
});

describe("summarizeToolCall", () => {
  it("describes each tool call in one short line", () => {
    expect(summarizeToolCall(call("t", "write", { path: "notes.md", content: "x" }))).toBe(
      "write notes.md",
    );
    expect(summarizeToolCall(call("t", "bash", { command: "ls -la\n  | wc -l" }))).toBe(
      "bash: ls -la | wc -l",
    );
    expect(summarizeToolCall(call("t", "web_fetch", { url: "https://example.com" }))).toBe(
      "web_fetch https://example.com",
    );
    expect(summarizeToolCall(call("t", "mystery", "whatever"))).toBe("mystery");
  });

  it("cuts long lines to 80 characters", () => {
    const line = summarizeToolCall(call("t", "bash", { command: `echo ${"x".repeat(200)}` }));
    expect(line).toHaveLength(80);
    expect(line.endsWith("…")).toBe(true);
  });

  it("copes with input that is not an object", () => {
    expect(summarizeToolCall(call("t", "read", null))).toBe("read");
    expect(summarizeToolCall(call("t", "read", 42))).toBe("read");
  });
});
