import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../src/ports/index.js";
import { csrfTokenOf, type DashboardHarness, openDashboard } from "../helpers/dashboard.js";

let harness: DashboardHarness;
afterEach(() => harness?.close());

const CONVERSATION: ChatMessage[] = [
  {
    role: "user",
    content: [{ type: "text", text: "What is in **notes.md**? <script>alert(1)</script>" }],
  },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "call-1", name: "read_file", input: { path: "notes.md" } },
    ],
  },
  {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "call-1", content: "Pickles are cucumbers in brine." },
    ],
  },
  { role: "assistant", content: [{ type: "text", text: "It says:\n\n- pickles\n- `brine`" }] },
  {
    role: "user",
    content: [{ type: "compaction", summary: "The user asked about notes.", replaces: 4 }],
  },
];

async function storedSession(key = "telegram:42") {
  const session = await harness.storage.history.createSession({ key, agentId: "pickle" });
  for (const message of CONVERSATION) await harness.storage.history.append(session.id, message);
  return session;
}

function form(fields: Record<string, string>, csrf: string, headers: Record<string, string> = {}) {
  return {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ ...fields, _csrf: csrf }).toString(),
  };
}

describe("the sessions page", () => {
  it("lists sessions and searches their id, key, agent and title", async () => {
    harness = await openDashboard();
    const telegram = await storedSession("telegram:42");
    const cli = await harness.storage.history.createSession({ key: "cli:me", agentId: "scout" });
    const all = await (await harness.request("/sessions")).text();
    expect(all).toContain(`href="/sessions/${telegram.id}"`);
    expect(all).toContain(`href="/sessions/${cli.id}"`);
    const found = await (await harness.request("/sessions?q=SCOUT")).text();
    expect(found).toContain(`href="/sessions/${cli.id}"`);
    expect(found).not.toContain(`href="/sessions/${telegram.id}"`);
    const byTitle = await (await harness.request("/sessions?q=notes.md")).text();
    expect(byTitle).toContain(`href="/sessions/${telegram.id}"`);
    expect(await (await harness.request("/sessions?q=zzz")).text()).toContain("no sessions match");
  });
});

describe("a session's transcript", () => {
  it("renders Markdown safely, tool calls as cards that expand, and compactions marked", async () => {
    harness = await openDashboard();
    const session = await storedSession();
    const html = await (await harness.request(`/sessions/${session.id}`)).text();
    expect(html).toContain("<strong>notes.md</strong>");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.toContain("<script>alert(1)");
    expect(html).toMatch(
      /<details class="tool"><summary>read_file \{&quot;path&quot;:&quot;notes.md&quot;\}/,
    );
    expect(html).toContain("Pickles are cucumbers in brine.");
    expect(html).toContain("<ul><li>pickles</li><li><code>brine</code></li></ul>");
    expect(html).toContain('class="compaction"');
    expect(html).toContain("stands for the 4 messages above");
    expect(html).toContain("answer it there");
  });

  it("names the model of each call, when a fallback of another provider answered a turn's second call", async () => {
    harness = await openDashboard();
    const session = await harness.storage.history.createSession({
      key: "telegram:42",
      agentId: "pickle",
    });
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };
    const calls = ["", "claude-sonnet-4-6", "", "gpt-4.1-mini"];
    for (const [index, message] of CONVERSATION.slice(0, 4).entries()) {
      const model = calls[index];
      await harness.storage.history.append(
        session.id,
        message,
        model ? { usage, call: { model } } : undefined,
      );
    }
    const html = await (await harness.request(`/sessions/${session.id}`)).text();
    expect(html).toContain("claude-sonnet-4-6, 10 in / 5 out tokens");
    expect(html).toContain("gpt-4.1-mini, 10 in / 5 out tokens");
  });

  it("answers a refresh with 204 while nothing changed, and the new transcript after", async () => {
    harness = await openDashboard();
    const session = await storedSession();
    const html = await (await harness.request(`/sessions/${session.id}`)).text();
    const refresh = html.match(/hx-get="([^"]+transcript[^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
    if (!refresh) throw new Error("no refresh URL in the page");
    expect((await harness.request(refresh)).status).toBe(204);
    await harness.storage.history.append(session.id, {
      role: "assistant",
      content: [{ type: "text", text: "One more thing." }],
    });
    const changed = await harness.request(refresh);
    expect(changed.status).toBe(200);
    expect(await changed.text()).toContain("One more thing.");
  });

  it("answers 404 for a session that does not exist", async () => {
    harness = await openDashboard();
    expect((await harness.request("/sessions/nope")).status).toBe(404);
    expect((await harness.request("/sessions/nope/transcript")).status).toBe(404);
  });
});

describe("the web chat", () => {
  it("starts a web session and queues the message as a chat job of the agent", async () => {
    harness = await openDashboard();
    const csrf = await csrfTokenOf(harness);
    const response = await harness.request(
      "/sessions/new",
      form({ agent: "scout", message: "hi there" }, csrf),
    );
    expect(response.status).toBe(303);
    const sessionId = response.headers.get("location")?.replace("/sessions/", "") ?? "";
    const session = await harness.storage.history.getSession(sessionId);
    expect(session).toMatchObject({ agentId: "scout", key: expect.stringMatching(/^web:scout:/) });
    const [job] = await harness.storage.queue.list({ sessionKey: session?.key });
    expect(job).toMatchObject({
      agentId: "scout",
      sessionId,
      message: "hi there",
      mode: "chat",
      replyTo: { kind: "silent" },
    });
    const page = await (await harness.request(`/sessions/${sessionId}`)).text();
    expect(page).toContain("queued…");
    expect(page).toContain("Send a message");
  });

  it("sends a further message from the session's chat box (htmx gets the transcript back)", async () => {
    harness = await openDashboard();
    const csrf = await csrfTokenOf(harness);
    const session = await harness.storage.history.createSession({
      key: "web:pickle:1",
      agentId: "pickle",
    });
    const response = await harness.request(
      `/sessions/${session.id}/chat`,
      form({ message: "and now?" }, csrf, { "hx-request": "true" }),
    );
    expect(response.status).toBe(200);
    const fragment = await response.text();
    expect(fragment).toContain('id="transcript"');
    expect(fragment).toContain("and now?");
    expect(await harness.storage.queue.list({ sessionKey: "web:pickle:1" })).toHaveLength(1);
  });

  it("refuses an empty message, an unknown agent, and a chat that is not a web chat", async () => {
    harness = await openDashboard();
    const csrf = await csrfTokenOf(harness);
    const empty = await harness.request(
      "/sessions/new",
      form({ agent: "pickle", message: " " }, csrf),
    );
    expect(empty.status).toBe(400);
    expect(await empty.text()).toContain("the message is empty");
    const unknown = await harness.request(
      "/sessions/new",
      form({ agent: "ghost", message: "hi" }, csrf),
    );
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain("no agent &quot;ghost&quot;; pick one of pickle, scout");
    const session = await storedSession("telegram:42");
    const other = await harness.request(
      `/sessions/${session.id}/chat`,
      form({ message: "hi" }, csrf),
    );
    expect(other.status).toBe(400);
    expect(await other.text()).toContain("only web chats take messages here");
    expect(await harness.storage.queue.list()).toEqual([]);
  });
});

describe("the Stop of a reply being written", () => {
  async function webSession(key: string) {
    return harness.storage.history.createSession({ key, agentId: "pickle" });
  }

  it("shows while the session's job runs, and stops it through the session stopper as /stop does", async () => {
    harness = await openDashboard();
    const csrf = await csrfTokenOf(harness);
    const session = await webSession("web:pickle:5");
    const idle = await (await harness.request(`/sessions/${session.id}`)).text();
    expect(idle).not.toContain(`/sessions/${session.id}/stop`);
    await harness.job("running", { sessionKey: session.key, sessionId: session.id });
    const page = await (await harness.request(`/sessions/${session.id}`)).text();
    expect(page).toContain(`hx-post="/sessions/${session.id}/stop"`);
    const stopForm = page.slice(page.indexOf(`action="/sessions/${session.id}/stop"`));
    expect(stopForm).toMatch(/^[^<]*>\s*<input type="hidden" name="_csrf" value="[\w-]+"/);
    expect(stopForm).toMatch(/^[\s\S]*?<button type="submit" class="danger">Stop<\/button>/);

    const plain = await harness.request(`/sessions/${session.id}/stop`, form({}, csrf));
    expect(plain.status).toBe(303);
    expect(plain.headers.get("location")).toBe(`/sessions/${session.id}`);
    const htmx = await harness.request(
      `/sessions/${session.id}/stop`,
      form({}, csrf, { "hx-request": "true" }),
    );
    expect(await htmx.text()).toContain('id="transcript"');
    expect(harness.stopped).toEqual([session.key, session.key]);
  });

  it("is refused without the CSRF token, and not shown on a read-only dashboard", async () => {
    harness = await openDashboard();
    const session = await webSession("web:pickle:6");
    await harness.job("running", { sessionKey: session.key, sessionId: session.id });
    const forged = await harness.request(`/sessions/${session.id}/stop`, form({}, "forged"));
    expect(forged.status).toBe(403);
    expect(harness.stopped).toEqual([]);
    await harness.close();

    harness = await openDashboard({ readOnly: true });
    const readOnly = await webSession("web:pickle:7");
    await harness.job("running", { sessionKey: readOnly.key, sessionId: readOnly.id });
    const page = await (await harness.request(`/sessions/${readOnly.id}`)).text();
    expect(page).toContain("the agent is working on it");
    expect(page).not.toContain(`/sessions/${readOnly.id}/stop`);
  });

  it("marks the chat box's message for Enter to send it", async () => {
    harness = await openDashboard();
    const session = await webSession("web:pickle:8");
    const page = await (await harness.request(`/sessions/${session.id}`)).text();
    expect(page).toMatch(/<textarea name="message" data-enter-sends=""/);
    expect(await (await harness.request("/sessions")).text()).toContain("data-enter-sends");
  });
});

describe("a reply's stream", () => {
  it("sends the text so far, each change and the end, as Server-Sent Events", async () => {
    harness = await openDashboard();
    const session = await harness.storage.history.createSession({
      key: "web:pickle:2",
      agentId: "pickle",
    });
    const job = await harness.job("running", { sessionKey: "web:pickle:2", sessionId: session.id });
    const reply = harness.replies.openReply({ kind: "silent" }, { jobId: job.id });
    reply.update("Brine");
    const response = await harness.request(`/sessions/${session.id}/stream?job=${job.id}`);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes('"Brine"')) text += new TextDecoder().decode((await reader.read()).value);
    reply.toolCall("read", "notes.md");
    reply.update("Brine is salty <b>water</b>.");
    await reply.finish("Brine is salty <b>water</b>.");
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += new TextDecoder().decode(chunk.value);
    }
    expect(text).toContain('event: text\ndata: {"kind":"text","text":"Brine"}');
    expect(text).toContain('event: tool\ndata: {"kind":"tool","name":"read","summary":"notes.md"}');
    expect(text).toContain('"text":"Brine is salty <b>water</b>."');
    expect(text.trim().endsWith('event: end\ndata: {"kind":"end"}')).toBe(true);
  });

  it("ends at once for a job that is not being written, and 404s without a job", async () => {
    harness = await openDashboard();
    const session = await harness.storage.history.createSession({
      key: "web:pickle:3",
      agentId: "pickle",
    });
    const job = await harness.job("done", { sessionKey: "web:pickle:3" });
    const ended = await harness.request(`/sessions/${session.id}/stream?job=${job.id}`);
    expect(await ended.text()).toContain("event: end");
    expect((await harness.request(`/sessions/${session.id}/stream`)).status).toBe(404);
  });

  it("is named on a pending job of the page, for the live script to fill in", async () => {
    harness = await openDashboard();
    const session = await harness.storage.history.createSession({
      key: "web:pickle:4",
      agentId: "pickle",
    });
    const job = await harness.job("queued", { sessionKey: "web:pickle:4", sessionId: session.id });
    const html = await (await harness.request(`/sessions/${session.id}`)).text();
    expect(html).toContain(`data-stream="/sessions/${session.id}/stream?job=${job.id}"`);
  });
});
