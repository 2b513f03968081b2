import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ClaimedJob, Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { approvalsSection } from "../../src/web/sections/approvals.js";
import { parkOnApproval } from "../helpers/approvals.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { mountSection, type SectionClient, textOf } from "../helpers/section-app.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const SECRET = "sk-ant-very-secret-key-123456";

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;
let job: ClaimedJob;

beforeEach(async () => {
  ws = makeWorkspace();
  clock = new TestClock("2025-01-15T06:00:00Z");
  storage = await openStorage(testConfig(ws.dir), clock);
  job = await parkOnApproval(storage, "ABC123", clock.now(), {
    agentId: "pickle",
    input: JSON.stringify({ command: `curl -H "x-api-key: ${SECRET}" https://example.org` }),
    replyTo: { kind: "silent" },
  });
});

afterEach(async () => {
  await storage.close();
  ws.remove();
});

function client(options: { readOnly?: boolean } = {}): SectionClient {
  const section = approvalsSection({
    approvals: storage.approvals,
    queue: storage.queue,
    clock,
    timezone: "UTC",
    redact: (text) => text.replaceAll(SECRET, "[redacted]"),
  });
  return mountSection(section, options);
}

describe("the Approvals section", () => {
  it("shows a pending call with its input (secrets taken out) and the three answers", async () => {
    const page = await client().get("/approvals");
    expect(page.status).toBe(200);
    const text = textOf(page.html);
    expect(text).toContain("pickle wants to run bash");
    expect(text).toContain('curl -H \\"x-api-key: [redacted]\\" https://example.org');
    expect(page.html).not.toContain(SECRET);
    expect(text).toContain("counts as Deny after Wed 2025-01-15 07:00 UTC");
    expect(text).toContain("Allow once Always allow Deny");
  });

  it("Allow once answers the request and wakes its parked job", async () => {
    const dashboard = client();
    const done = await dashboard.submit(
      await dashboard.get("/approvals"),
      "/approvals/ABC123/answer",
      {
        button: "Allow once",
      },
    );
    expect(done.status).toBe(303);
    expect(await storage.approvals.get("ABC123")).toMatchObject({
      state: "allowed",
      decision: "once",
      answeredBy: "dashboard",
    });
    expect((await storage.queue.get(job.id))?.state).toBe("queued");
    const page = textOf((await dashboard.get(done.location ?? "")).html);
    expect(page).toContain(`Allowed bash for pickle (job ${job.id}).`);
    expect(page).toContain("No approval requests pending.");
  });

  it("Always allow stores a grant, which Revoke removes", async () => {
    const dashboard = client();
    await dashboard.submit(await dashboard.get("/approvals"), "/approvals/ABC123/answer", {
      button: "Always allow",
    });
    expect(await storage.approvals.isGranted("pickle", "bash", "*")).toBe(true);
    const page = await dashboard.get("/approvals");
    expect(textOf(page.html)).toMatch(/pickle bash \* Wed 2025-01-15 06:00 UTC dashboard Revoke/);
    const revoked = await dashboard.submit(page, "/approvals/grants/revoke", { button: "Revoke" });
    expect(revoked.status).toBe(303);
    expect(await storage.approvals.isGranted("pickle", "bash", "*")).toBe(false);
    expect(textOf((await dashboard.get(revoked.location ?? "")).html)).toContain(
      "Revoked: pickle asks again before bash under *.",
    );
  });

  it("Deny refuses the call", async () => {
    const dashboard = client();
    await dashboard.submit(await dashboard.get("/approvals"), "/approvals/ABC123/answer", {
      button: "Deny",
    });
    expect((await storage.approvals.get("ABC123"))?.state).toBe("denied");
  });

  it("says why a request cannot be answered: answered already, expired, unknown, bad answer", async () => {
    const dashboard = client();
    await dashboard.post("/approvals/ABC123/answer", { decision: "deny" });
    const twice = await dashboard.post("/approvals/abc123/answer", { decision: "once" });
    expect(twice.status).toBe(409);
    expect(textOf(twice.html)).toContain(
      "approval request ABC123 was already denied by dashboard at Wed 2025-01-15 06:00 UTC",
    );
    const unknown = await dashboard.post("/approvals/NOPE/answer", { decision: "once" });
    expect(unknown.status).toBe(404);
    expect(textOf(unknown.html)).toContain('no approval request "NOPE"');
    const bad = await dashboard.post("/approvals/ABC123/answer", { decision: "maybe" });
    expect(bad.status).toBe(400);
    expect(textOf(bad.html)).toContain(
      '"maybe" is not an answer; choose Allow once, Always allow or Deny.',
    );
  });

  it("refuses an answer after the request expired: it counted as Deny", async () => {
    clock.advance(3_600_000);
    const late = await client().post("/approvals/ABC123/answer", { decision: "once" });
    expect(late.status).toBe(409);
    expect(textOf(late.html)).toContain("expired at Wed 2025-01-15 07:00 UTC and counted as deny");
    expect((await storage.approvals.get("ABC123"))?.state).toBe("expired");
  });

  it("answers 404 when the grant to revoke does not exist", async () => {
    const page = await client().post("/approvals/grants/revoke", {
      agent: "pickle",
      tool: "bash",
      pattern: "*",
    });
    expect(page.status).toBe(404);
    expect(textOf(page.html)).toContain(
      'No always-allow grant of bash under * for agent "pickle".',
    );
  });

  it("in read-only mode shows no button and refuses answers with 403", async () => {
    const dashboard = client({ readOnly: true });
    const page = await dashboard.get("/approvals");
    expect(textOf(page.html)).toContain("pickle wants to run bash");
    expect(page.html).not.toMatch(/<form|<button/);
    expect((await dashboard.post("/approvals/ABC123/answer", { decision: "once" })).status).toBe(
      403,
    );
    expect((await dashboard.post("/approvals/grants/revoke", {})).status).toBe(403);
    expect((await storage.approvals.get("ABC123"))?.state).toBe("pending");
  });
});
