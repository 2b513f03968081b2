import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadWorkspaceCrons } from "../../src/cron/admin.js";
import type { ClaimedJob, Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { cronsSection } from "../../src/web/sections/crons.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { mountSection, type SectionClient, textOf } from "../helpers/section-app.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const NEWS = `# Morning news, for Ana
schedule: "0 8 * * *"   # every morning
prompt: Summarize the news
timezone: Europe/Berlin
`;

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;

beforeEach(async () => {
  ws = makeWorkspace({
    "crons/news.yaml": NEWS,
    "crons/standup.yaml": 'schedule: "30 9 * * 1-5"\nprompt: Standup notes\nenabled: false\n',
    "crons/broken.yaml": 'schedule: "0 8 * *"\nprompt: x\n',
  });
  clock = new TestClock("2025-01-15T06:00:00Z");
  storage = await openStorage(testConfig(ws.dir), clock);
});

afterEach(async () => {
  await storage.close();
  ws.remove();
});

function client(options: { readOnly?: boolean } = {}): SectionClient {
  const config = testConfig(ws.dir);
  const section = cronsSection({
    loadCrons: () => loadWorkspaceCrons(ws.dir, config),
    state: storage.cronState,
    queue: storage.queue,
    history: storage.history,
    clock,
    maxAttempts: 3,
    schedules: storage.schedules,
  });
  return mountSection(section, options);
}

/** Runs the job as a worker would: the prompt, a reply, done. */
async function answer(reply: string): Promise<void> {
  const [job] = (await storage.queue.claim("w", 1)) as [ClaimedJob];
  const session = await storage.history.createSession({
    key: job.sessionKey,
    agentId: job.agentId,
  });
  await storage.checkpoint(job, session.id, {
    role: "user",
    content: [{ type: "text", text: job.message }],
  });
  await storage.history.append(session.id, {
    role: "assistant",
    content: [{ type: "text", text: reply }],
  });
  await storage.queue.complete({ ...job, sessionId: session.id });
}

describe("the Crons section", () => {
  it("lists each cron with its schedule in words and zone, next run, status and actions", async () => {
    const page = await client().get("/crons");
    expect(page.status).toBe(200);
    const text = textOf(page.html);
    expect(text).toContain("news at 08:00 every day 0 8 * * * (Europe/Berlin)");
    expect(text).toContain("Wed 2025-01-15 08:00 CET");
    expect(text).toContain("at 09:30 on Monday–Friday 30 9 * * 1-5 (UTC)");
    expect(text).toMatch(/standup .* never disabled/);
    expect(page.html).toContain('action="/crons/news/run"');
    expect(page.html).toContain('action="/crons/standup/enable"');
    expect(page.html).toContain('class="scroll-x"');
  });

  it("shows the files that did not load, with the key and the fix", async () => {
    const text = textOf((await client().get("/crons")).html);
    expect(text).toContain("Files that did not load");
    expect(text).toMatch(/broken\.yaml: "schedule" "0 8 \* \*" has 4 fields; write 5/);
  });

  it("Run now enqueues a job like cron run, and the cron's page shows it and then its reply", async () => {
    const dashboard = client();
    const list = await dashboard.get("/crons");
    const done = await dashboard.submit(list, "/crons/news/run", { button: "Run now" });
    expect(done.status).toBe(303);
    expect(done.location).toMatch(/^\/crons\/news\?notice=Enqueued\+job\+.*&mac=/);
    const [job] = await storage.queue.list();
    expect(job).toMatchObject({ agentId: "pickle", message: "Summarize the news", maxAttempts: 3 });
    expect(job?.sessionKey).toMatch(/^cron:news:manual:/);

    const queued = textOf((await dashboard.get(done.location ?? "")).html);
    expect(queued).toContain(`Enqueued job ${job?.id}: news runs now.`);
    expect(queued).toMatch(new RegExp(`${job?.id} \\(run now\\) queued`));

    await answer("Three headlines: rain, trains, cake.");
    const page = textOf((await dashboard.get("/crons/news")).html);
    expect(page).toMatch(/done Three headlines: rain, trains, cake\./);
    expect(textOf((await dashboard.get("/crons")).html)).toMatch(/Wed 2025-01-15 07:00 CET done/);
  });

  it("shows a notice only when the dashboard wrote it, not from a crafted link", async () => {
    const dashboard = client();
    const crafted = await dashboard.get(
      "/crons/news?notice=Paste+your+token+at+evil.example&mac=x",
    );
    expect(crafted.status).toBe(200);
    expect(crafted.html).not.toContain("evil.example");
    const done = await dashboard.post("/crons/news/run");
    const tampered = (done.location ?? "").replace("news+runs+now", "send+money");
    expect(textOf((await dashboard.get(tampered)).html)).not.toContain("send money");
  });

  it("a cron's page lists its next runs in its zone and its definition", async () => {
    const text = textOf((await client().get("/crons/news")).html);
    expect(text).toContain(
      "Next runs Wed 2025-01-15 08:00 CET Thu 2025-01-16 08:00 CET Fri 2025-01-17 08:00 CET",
    );
    expect(text).toContain("Prompt Summarize the news");
    expect(text).toContain("Replies to silent");
  });

  it("Disable writes enabled: false into the file, keeping its comments; Enable switches it back", async () => {
    const dashboard = client();
    const disabled = await dashboard.submit(
      await dashboard.get("/crons/news"),
      "/crons/news/disable",
      { button: "Disable" },
    );
    expect(disabled.status).toBe(303);
    const file = readFileSync(`${ws.dir}/crons/news.yaml`, "utf8");
    expect(file).toContain("# Morning news, for Ana");
    expect(file).toContain("# every morning");
    expect(file).toMatch(/enabled: false\n$/);
    const page = await dashboard.get(disabled.location ?? "");
    expect(textOf(page.html)).toContain("Disabled news (enabled: false in");
    expect(textOf(page.html)).toContain("None: the cron is disabled.");

    await dashboard.submit(page, "/crons/news/enable", { button: "Enable" });
    expect(readFileSync(`${ws.dir}/crons/news.yaml`, "utf8")).toMatch(/enabled: true\n$/);
  });

  it("switches the file as it is when the button is pressed, keeping an edit made after the page loaded", async () => {
    const dashboard = client();
    const page = await dashboard.get("/crons/news");
    ws.write("crons/news.yaml", `${NEWS}# edited\n`);
    const answered = await dashboard.submit(page, "/crons/news/disable", { button: "Disable" });
    expect(answered.status).toBe(303);
    expect(readFileSync(`${ws.dir}/crons/news.yaml`, "utf8")).toContain("# edited");
  });

  it("answers an unknown cron id with a 404 page naming the known ids", async () => {
    const dashboard = client();
    for (const page of [
      await dashboard.get("/crons/nope"),
      await dashboard.post("/crons/nope/run"),
    ]) {
      expect(page.status).toBe(404);
      expect(textOf(page.html)).toContain(
        'no cron "nope" in crons/ (known: news, standup); the id is the file name without .yaml',
      );
    }
    expect(await storage.queue.list()).toEqual([]);
  });

  it("answers a broken cron's page with its file's error", async () => {
    const page = await client().get("/crons/broken");
    expect(page.status).toBe(404);
    expect(textOf(page.html)).toContain("has 4 fields");
  });

  it("in read-only mode shows no form or button, and refuses every action with 403", async () => {
    const dashboard = client({ readOnly: true });
    for (const path of ["/crons", "/crons/news"]) {
      const page = await dashboard.get(path);
      expect(page.status).toBe(200);
      expect(page.html).not.toMatch(/<form|<button/);
    }
    for (const action of ["run", "enable", "disable"]) {
      const refused = await dashboard.post(`/crons/news/${action}`);
      expect(refused.status).toBe(403);
      expect(textOf(refused.html)).toContain("This dashboard is read-only");
    }
    expect(await storage.queue.list()).toEqual([]);
    expect(readFileSync(`${ws.dir}/crons/news.yaml`, "utf8")).toBe(NEWS);
  });

  it("lists the reminders set in chats with chat and creator, and cancels one with its button", async () => {
    await storage.schedules.create(
      {
        id: "k7m2qx",
        agentId: "pickle",
        chat: { kind: "telegram", chatId: "4242" },
        createdBy: "agent pickle",
        kind: "message",
        text: "Call the dentist",
        at: Date.parse("2025-01-16T08:00:00Z"),
        cron: null,
        timezone: "Europe/Berlin",
        createdAt: clock.now(),
      },
      20,
    );
    const dashboard = client();
    const page = await dashboard.get("/crons");
    const text = textOf(page.html);
    expect(text).toContain("Reminders set in chats");
    expect(text).toMatch(
      /k7m2qx telegram:4242 agent pickle message: Call the dentist once Thu 2025-01-16 09:00 CET/,
    );
    const done = await dashboard.submit(page, "/crons/schedules/k7m2qx/cancel", {
      button: "Cancel",
    });
    expect(done.status).toBe(303);
    const after = textOf((await dashboard.get(done.location ?? "")).html);
    expect(after).toContain("Cancelled k7m2qx (message for telegram:4242).");
    expect(after).toContain("None: agents with the schedule tool set them up when a chat asks.");
    expect((await storage.schedules.get("k7m2qx"))?.state).toBe("cancelled");
    const readOnly = await client({ readOnly: true }).post("/crons/schedules/k7m2qx/cancel");
    expect(readOnly.status).toBe(403);
  });
});
