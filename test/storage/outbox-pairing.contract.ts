/**
 * The OutboxStore and PairingStore suites, written once as functions of a factory so every
 * adapter (SQLite, PostgreSQL) runs the same cases.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  MAX_PENDING_PER_PLATFORM,
  type OutboxStore,
  PAIRING_CODE_TTL_MS,
  type PairingStore,
} from "../../src/ports/index.js";
import type { StoreHandle } from "../helpers/stores.js";

const address = { dedupeKey: "job:1", platform: "telegram" as const, chatId: "42" };
const HOUR = 60 * 60 * 1000;

/** Runs the OutboxStore contract against a factory. */
export function outboxContract(name: string, open: () => Promise<StoreHandle<OutboxStore>>): void {
  describe(`OutboxStore contract: ${name}`, () => {
    let handle: StoreHandle<OutboxStore>;
    let outbox: OutboxStore;
    beforeEach(async () => {
      handle = await open();
      outbox = handle.store;
    });
    afterEach(() => handle.cleanup());

    it("keeps a draft's message ids, and turns the draft into a pending entry on submit", async () => {
      const draft = await outbox.openDraft(address, 1000);
      expect(draft).toMatchObject({ state: "draft", text: null, messageIds: [] });
      await outbox.setMessageIds(draft.id, ["7", "8"], 1001);
      expect((await outbox.openDraft(address, 1002)).messageIds).toEqual(["7", "8"]);

      const pending = await outbox.submit(address, "final", 1003);
      expect(pending).toMatchObject({
        id: draft.id,
        state: "pending",
        text: "final",
        messageIds: ["7", "8"],
      });
      expect(await outbox.due("telegram", 1003, 10)).toEqual([pending]);
      expect(await outbox.due("discord", 1003, 10)).toEqual([]);
    });

    it("never submits a key twice: a resumed job's reply is delivered once", async () => {
      const first = await outbox.submit(address, "answer", 1000);
      await outbox.markDelivered(first.id, 1100);
      const again = await outbox.submit(address, "answer again", 2000);
      expect(again).toMatchObject({ state: "delivered", text: "answer", deliveredAt: 1100 });
      expect(await outbox.due("telegram", 5000, 10)).toEqual([]);
    });

    it("retries at the given time, counting attempts, and survives a reopen", async () => {
      const entry = await outbox.submit(address, "answer", 1000);
      await outbox.markRetry(entry.id, "telegram: 500", 5000, 1001);
      expect(await outbox.due("telegram", 4999, 10)).toEqual([]);
      outbox = await handle.reopen();
      const [due] = await outbox.due("telegram", 5000, 10);
      expect(due).toMatchObject({ attempts: 1, lastError: "telegram: 500", nextAttemptAt: 5000 });
      expect(await outbox.summary()).toEqual({ pending: 1, failed: 0, oldestPendingAt: 1000 });
    });

    it("lends an entry to one sender at a time; the outcome releases it, an expired lease lapses", async () => {
      const entry = await outbox.submit(address, "answer", 1000);
      expect(await outbox.claim(entry.id, "node-a", 1000, 61_000)).toMatchObject({
        state: "pending",
        text: "answer",
      });
      expect(await outbox.claim(entry.id, "node-b", 1001, 61_001)).toBeNull();
      // The same holder again: a process restarted under its instance id.
      expect(await outbox.claim(entry.id, "node-a", 1002, 61_002)).not.toBeNull();
      expect(await outbox.claim(entry.id, "node-b", 61_002, 121_002)).not.toBeNull();
      await outbox.markRetry(entry.id, "telegram: 500", 130_000, 61_003);
      expect(await outbox.claim(entry.id, "node-a", 129_999, 189_999)).toBeNull();
      expect(await outbox.claim(entry.id, "node-a", 130_000, 190_000)).not.toBeNull();
      await outbox.markDelivered(entry.id, 130_001);
      expect(await outbox.claim(entry.id, "node-b", 999_999, 1_059_999)).toBeNull();
    });

    it("prunes delivered entries past the retention, in batches, keeping pending and failed ones", async () => {
      const at = (key: string) => ({ ...address, dedupeKey: key });
      for (const key of ["old-1", "old-2", "old-3"]) {
        await outbox.markDelivered((await outbox.submit(at(key), "hi", 1000)).id, 1100);
      }
      await outbox.markDelivered((await outbox.submit(at("recent"), "hi", 1000)).id, 5000);
      await outbox.submit(at("pending"), "hi", 1000);
      await outbox.markFailed((await outbox.submit(at("failed"), "hi", 1000)).id, "403", 1100);

      expect(await outbox.pruneDelivered(2000, 2)).toBe(2);
      expect(await outbox.pruneDelivered(2000, 2)).toBe(1);
      expect(await outbox.pruneDelivered(2000, 2)).toBe(0);

      for (const key of ["old-1", "old-2", "old-3"]) expect(await outbox.get(key)).toBeNull();
      expect(await outbox.get("recent")).toMatchObject({ state: "delivered" });
      expect(await outbox.summary()).toEqual({ pending: 1, failed: 1, oldestPendingAt: 1000 });
    });

    it("lists the texts of the file entries, in any state, and of no other entry", async () => {
      const at = (key: string) => ({ ...address, dedupeKey: key });
      await outbox.markDelivered((await outbox.submit(at("file:j1:ab"), "photo", 1000)).id, 1100);
      await outbox.markFailed((await outbox.submit(at("voice:j2"), "voice", 1000)).id, "403", 1100);
      await outbox.submit(at("file:j3:cd"), "document", 1000);
      await outbox.submit(at("job:j1"), "a reply", 1000);
      expect((await outbox.fileTexts()).sort()).toEqual(["document", "photo", "voice"]);
    });

    it("keeps a refused entry as failed, out of the due list", async () => {
      const entry = await outbox.submit(address, "answer", 1000);
      await outbox.markFailed(entry.id, "telegram: 403 bot was blocked by the user", 1001);
      expect(await outbox.due("telegram", 9999, 10)).toEqual([]);
      expect(await outbox.summary()).toEqual({ pending: 0, failed: 1, oldestPendingAt: null });
      expect(await outbox.get(address.dedupeKey)).toMatchObject({ state: "failed", attempts: 1 });
    });
  });
}

/** Runs the PairingStore contract against a factory. */
export function pairingContract(
  name: string,
  open: () => Promise<StoreHandle<PairingStore>>,
): void {
  describe(`PairingStore contract: ${name}`, () => {
    let handle: StoreHandle<PairingStore>;
    let pairing: PairingStore;
    const bob = { platform: "telegram" as const, userId: "555", userName: "@bob", chatId: "555" };
    beforeEach(async () => {
      handle = await open();
      pairing = handle.store;
    });
    afterEach(() => handle.cleanup());

    it("gives a user the same 8-character code for an hour, then a new one", async () => {
      const first = await pairing.requestCode(bob, 0);
      expect(first.code).toMatch(/^[A-Z2-9]{8}$/);
      expect((await pairing.requestCode(bob, HOUR - 1)).code).toBe(first.code);
      const later = await pairing.requestCode(bob, HOUR);
      expect(later.code).not.toBe(first.code);
      expect(later.expiresAt).toBe(HOUR + PAIRING_CODE_TTL_MS);
    });

    it(`keeps at most ${MAX_PENDING_PER_PLATFORM} pending codes per platform: a flood cannot hold them`, async () => {
      const flood = [];
      for (let n = 0; n < MAX_PENDING_PER_PLATFORM; n += 1) {
        flood.push(await pairing.requestCode({ ...bob, userId: `throwaway${n}` }, n));
      }
      // A real person asking after the flood still gets a code: the oldest is replaced.
      const real = await pairing.requestCode({ ...bob, userId: "real" }, 10);
      const users = (await pairing.pending(11)).map((request) => request.userId);
      expect(users).toEqual([...flood.slice(1).map((request) => request.userId), "real"]);
      expect(await pairing.approve(flood[0]?.code ?? "", 12)).toBeNull();
      expect(await pairing.replacedSince(0)).toEqual([{ platform: "telegram", count: 1 }]);
      // Other platforms have their own slots.
      await pairing.requestCode({ ...bob, platform: "discord", userId: "d1" }, 13);
      expect((await pairing.pending(14)).map((request) => request.userId)).toContain("real");
      expect(await pairing.approve(real.code, 15)).toMatchObject({ userId: "real" });
    });

    it("counts replaced requests per platform, in the window asked for", async () => {
      for (let n = 0; n < MAX_PENDING_PER_PLATFORM + 2; n += 1) {
        await pairing.requestCode({ ...bob, userId: `t${n}` }, n * 1000);
        await pairing.requestCode({ ...bob, platform: "discord", userId: `d${n}` }, n * 1000);
      }
      await pairing.requestCode({ ...bob, userId: "late" }, 9000);
      expect(await pairing.replacedSince(0)).toEqual([
        { platform: "discord", count: 2 },
        { platform: "telegram", count: 3 },
      ]);
      expect(await pairing.replacedSince(4000)).toEqual([
        { platform: "discord", count: 1 },
        { platform: "telegram", count: 2 },
      ]);
    });

    it("clears every pending code, keeping approved users", async () => {
      const approved = await pairing.requestCode({ ...bob, userId: "friend" }, 0);
      await pairing.approve(approved.code, 1);
      const stale = await pairing.requestCode(bob, 2);
      await pairing.requestCode({ ...bob, platform: "discord", userId: "d1" }, 3);
      expect(await pairing.clear()).toBe(2);
      expect(await pairing.pending(4)).toEqual([]);
      expect(await pairing.approve(stale.code, 5)).toBeNull();
      expect(await pairing.isApproved("telegram", "friend")).toBe(true);
      expect((await pairing.requestCode(bob, 6)).code).not.toBe(stale.code);
    });

    it("approves by code (any case), once, and revokes; approvals survive a reopen", async () => {
      const request = await pairing.requestCode(bob, 0);
      const code = request.code;
      expect(await pairing.approve(code.toLowerCase(), 10)).toMatchObject({
        userId: "555",
        approvedAt: 10,
      });
      expect(await pairing.approve(code, 11)).toBeNull();
      expect(await pairing.pending(12)).toEqual([]);
      pairing = await handle.reopen();
      expect(await pairing.isApproved("telegram", "555")).toBe(true);
      expect(await pairing.isApproved("discord", "555")).toBe(false);
      expect(await pairing.revoke("555")).toEqual([
        expect.objectContaining({ platform: "telegram" }),
      ]);
      expect(await pairing.isApproved("telegram", "555")).toBe(false);
    });

    it("refuses an expired code", async () => {
      const request = await pairing.requestCode(bob, 0);
      expect(await pairing.approve(request.code, PAIRING_CODE_TTL_MS)).toBeNull();
    });

    it("lets a refusal through at most once an hour per user", async () => {
      expect(await pairing.noteRefusal("telegram", "555", 0)).toBe(true);
      expect(await pairing.noteRefusal("telegram", "555", HOUR - 1)).toBe(false);
      expect(await pairing.noteRefusal("telegram", "556", 1)).toBe(true);
      expect(await pairing.noteRefusal("telegram", "555", HOUR)).toBe(true);
    });
  });
}
