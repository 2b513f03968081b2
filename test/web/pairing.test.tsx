import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { WELCOME_TEXT } from "../../src/storage/pairing-approval.js";
import { pairingSection } from "../../src/web/sections/pairing.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { mountSection, type SectionClient, textOf } from "../helpers/section-app.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;
let code: string;

beforeEach(async () => {
  ws = makeWorkspace();
  clock = new TestClock("2025-01-15T06:00:00Z");
  storage = await openStorage(testConfig(ws.dir), clock);
  const applicant = { platform: "telegram", userId: "42", userName: "Ana", chatId: "42" } as const;
  code = (await storage.pairing.requestCode(applicant, clock.now())).code;
});

afterEach(async () => {
  await storage.close();
  ws.remove();
});

function client(options: { readOnly?: boolean } = {}): SectionClient {
  const section = pairingSection({
    pairing: storage.pairing,
    outbox: storage.outbox,
    clock,
    inAllowedUserIds: (platform, userId) => platform === "telegram" && userId === "7",
    timezone: "Europe/Berlin",
  });
  return mountSection(section, options);
}

describe("the Pairing section", () => {
  it("lists who asked and when their code expires, in the workspace's zone, but not the code", async () => {
    const page = await client().get("/pairing");
    expect(page.status).toBe(200);
    expect(textOf(page.html)).toContain(
      "telegram 42 Ana Wed 2025-01-15 07:00 CET Wed 2025-01-15 08:00 CET",
    );
    expect(page.html).not.toContain(code);
    expect(textOf(page.html)).toContain("No approved users");
  });

  it("approves the user of a typed code (any case), who is then listed with Revoke", async () => {
    const dashboard = client();
    const done = await dashboard.submit(await dashboard.get("/pairing"), "/pairing/approve", {
      button: "Approve",
      fill: { code: ` ${code.toLowerCase()} ` },
    });
    expect(done.status).toBe(303);
    expect(await storage.pairing.isApproved("telegram", "42")).toBe(true);
    const page = await dashboard.get(done.location ?? "");
    expect(textOf(page.html)).toContain(
      "Approved telegram user 42 (Ana); they are told in their chat, and their next message runs.",
    );
    const welcome = await storage.outbox.due("telegram", clock.now(), 10);
    expect(welcome).toMatchObject([{ chatId: "42", text: WELCOME_TEXT }]);
    expect(textOf(page.html)).toContain("No pending pairing codes.");
    expect(textOf(page.html)).toMatch(/telegram 42 Ana Wed 2025-01-15 07:00 CET Revoke/);
  });

  it("says why a code cannot be approved: empty, unknown or expired", async () => {
    const dashboard = client();
    const empty = await dashboard.post("/pairing/approve", { code: " " });
    expect(empty.status).toBe(400);
    expect(textOf(empty.html)).toContain("Type the 8-character code the person was shown.");
    const wrong = await dashboard.post("/pairing/approve", { code: "NOPE2345" });
    expect(wrong.status).toBe(400);
    expect(textOf(wrong.html)).toContain(
      'Pairing code "NOPE2345" is not pending (codes are valid for 1 hour); check it with the person',
    );
    clock.advance(61 * 60_000);
    const late = await dashboard.post("/pairing/approve", { code });
    expect(late.status).toBe(400);
    expect(await storage.pairing.isApproved("telegram", "42")).toBe(false);
  });

  it("revokes an approved user, and says when they are also in allowed_user_ids", async () => {
    await storage.pairing.approve(code, clock.now());
    const seven = { platform: "telegram", userId: "7", userName: "Bo", chatId: "7" } as const;
    await storage.pairing.approve(
      (await storage.pairing.requestCode(seven, clock.now())).code,
      clock.now(),
    );
    const dashboard = client();
    const revoked = await dashboard.post("/pairing/revoke", { platform: "telegram", user: "42" });
    expect(revoked.status).toBe(303);
    expect(await storage.pairing.isApproved("telegram", "42")).toBe(false);
    const page = await dashboard.get("/pairing");
    const second = await dashboard.submit(page, "/pairing/revoke", { button: "Revoke" });
    expect(textOf((await dashboard.get(second.location ?? "")).html)).toContain(
      "Revoked telegram user 7 (Bo). They are also in telegram.allowed_user_ids in picklebot.yaml",
    );
  });

  it("answers 404 when the user to revoke is not approved or the platform is unknown", async () => {
    const dashboard = client();
    const nobody = await dashboard.post("/pairing/revoke", { platform: "telegram", user: "99" });
    expect(nobody.status).toBe(404);
    expect(textOf(nobody.html)).toContain('No approved telegram user "99".');
    const platform = await dashboard.post("/pairing/revoke", { platform: "irc", user: "42" });
    expect(platform.status).toBe(404);
  });

  it("drops every pending code", async () => {
    const dashboard = client();
    const done = await dashboard.submit(await dashboard.get("/pairing"), "/pairing/clear");
    expect(textOf((await dashboard.get(done.location ?? "")).html)).toContain(
      "Dropped 1 pending code;",
    );
    expect(await storage.pairing.pending(clock.now())).toEqual([]);
  });

  it("in read-only mode shows no form and refuses every action with 403", async () => {
    const dashboard = client({ readOnly: true });
    const page = await dashboard.get("/pairing");
    expect(page.html).not.toMatch(/<form|<button|<input/);
    for (const action of ["approve", "revoke", "clear"]) {
      expect(
        (await dashboard.post(`/pairing/${action}`, { code, platform: "telegram", user: "42" }))
          .status,
      ).toBe(403);
    }
    expect(await storage.pairing.pending(clock.now())).toHaveLength(1);
  });
});
