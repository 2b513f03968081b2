import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createToolbox,
  DEFAULT_TOOLS,
  runToolCalls,
  summarizeToolCall,
  TOOL_NAMES,
} from "../../src/agents/tools/index.js";
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

  it("builds post_message on the poster it is given", async () => {
    const posted: string[] = [];
    const [tool] = createToolbox(["post_message"], {
      postMessage: async (text) => {
        posted.push(text);
        return "posted to the test";
      },
    });
    expect(await tool?.run({ text: "halfway there" }, temp.context())).toBe("posted to the test");
    expect(posted).toEqual(["halfway there"]);
  });

  it("tells the model when post_message has nowhere to post", async () => {
    const [tool] = createToolbox(["post_message"]);
    await expect(tool?.run({ text: "hello" }, temp.context())).rejects.toThrow(
      "no chat to post to",
    );
  });

  it("refuses an unknown tool name, listing the known ones", () => {
    expect(() => createToolbox(["read", "shell"])).toThrow(UserError);
    expect(() => createToolbox(["shell"])).toThrow(
      'unknown tool "shell"; use one of: read, write, edit, bash, web_fetch, web_search, post_message',
    );
  });
});

describe("runToolCalls", () => {
  it("runs calls concurrently: two commands that wait for each other both finish", async () => {
    const tools = createToolbox(["bash"], { bashTimeoutMs: 20_000 });
    const waitFor = (mine: string, theirs: string) =>
      `touch ${mine}; while [ ! -f ${theirs} ]; do sleep 0.01; done; echo ${mine} saw ${theirs}`;
    const { results } = await runToolCalls(
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
    const { results } = await runToolCalls(
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
    const { results } = await runToolCalls(
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

describe("the tool registry", () => {
  it.each(TOOL_NAMES)("builds %s under its own name, and summarises its calls", (name) => {
    const [tool] = createToolbox([name]);
    expect(tool?.spec.name).toBe(name);
    expect(summarizeToolCall(call("t", name, {}))).toBe(name);
  });

  it("gives agents that list no tools only registered ones", () => {
    expect(DEFAULT_TOOLS.every((name) => TOOL_NAMES.includes(name))).toBe(true);
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
    expect(summarizeToolCall(call("t", "post_message", { text: "done" }))).toBe(
      "post_message: done",
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
