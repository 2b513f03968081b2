/**
 * The ApprovalStore suite, written once as a function of a factory so every adapter
 * (SQLite, PostgreSQL) runs the same cases.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  APPROVAL_INPUT_MAX_CHARS,
  type ApprovalStore,
  type NewApprovalRequest,
} from "../../src/ports/index.js";
import type { StoreHandle } from "../helpers/stores.js";

const HOUR = 60 * 60 * 1000;

/** A request made at `createdAt`, valid for an hour. */
export function newRequest(
  id: string,
  overrides: Partial<NewApprovalRequest> = {},
): NewApprovalRequest {
  const createdAt = overrides.createdAt ?? 1000;
  return {
    id,
    jobId: `job-${id}`,
    agentId: "coder",
    tool: "bash",
    input: JSON.stringify({ command: "rm -rf build" }),
    pattern: "*",
    replyTo: { kind: "telegram", chatId: "42" },
    createdAt,
    expiresAt: createdAt + HOUR,
    ...overrides,
  };
}

/** Runs the ApprovalStore contract against a factory. */
export function approvalContract(
  name: string,
  open: () => Promise<StoreHandle<ApprovalStore>>,
): void {
  describe(`ApprovalStore contract: ${name}`, () => {
    let handle: StoreHandle<ApprovalStore>;
    let approvals: ApprovalStore;
    beforeEach(async () => {
      handle = await open();
      approvals = handle.store;
    });
    afterEach(() => handle.cleanup());

    it("opens a pending request once: a second open returns the stored row unchanged", async () => {
      const first = await approvals.open(newRequest("AAAA2222"));
      expect(first).toEqual({
        ...newRequest("AAAA2222"),
        state: "pending",
        decision: null,
        answeredBy: null,
        answeredAt: null,
        messageId: null,
      });
      const again = await approvals.open(newRequest("AAAA2222", { tool: "write", createdAt: 5 }));
      expect(again).toEqual(first);
      expect(await approvals.get("AAAA2222")).toEqual(first);
      expect(await approvals.get("NOSUCHID")).toBeNull();
    });

    it("keeps the first characters of a long input, and survives a reopen", async () => {
      const input = JSON.stringify({ content: "x".repeat(2000) });
      await approvals.open(newRequest("LONG2222", { input }));
      await approvals.setMessageId("LONG2222", "777");
      approvals = await handle.reopen();
      const stored = await approvals.get("LONG2222");
      expect(stored?.input).toHaveLength(APPROVAL_INPUT_MAX_CHARS);
      expect(stored?.input.startsWith('{"content":"xxx')).toBe(true);
      expect(stored?.input.endsWith("…")).toBe(true);
      expect(stored?.messageId).toBe("777");
    });

    it("lists the pending requests oldest first, and no answered one", async () => {
      await approvals.open(newRequest("BBBB2222", { createdAt: 2000 }));
      await approvals.open(newRequest("CCCC2222", { createdAt: 1000 }));
      await approvals.open(newRequest("DDDD2222", { createdAt: 3000 }));
      await approvals.answer("DDDD2222", "deny", "cli", 3001);
      expect((await approvals.pending()).map((request) => request.id)).toEqual([
        "CCCC2222",
        "BBBB2222",
      ]);
    });

    it("answers a request once; a second answer, of any kind, is refused", async () => {
      await approvals.open(newRequest("EEEE2222"));
      const allowed = await approvals.answer("EEEE2222", "once", "telegram:1 (Ana)", 2000);
      expect(allowed).toMatchObject({
        state: "allowed",
        decision: "once",
        answeredBy: "telegram:1 (Ana)",
        answeredAt: 2000,
      });
      expect(await approvals.answer("EEEE2222", "deny", "cli", 2001)).toBeNull();
      expect(await approvals.answer("EEEE2222", "always", "cli", 2002)).toBeNull();
      expect(await approvals.get("EEEE2222")).toEqual(allowed);
      expect(await approvals.answer("NOSUCHID", "once", "cli", 2000)).toBeNull();
      expect(await approvals.grants()).toEqual([]);
    });

    it("decides a request pressed twice at once exactly once", async () => {
      await approvals.open(newRequest("FFFF2222"));
      const answers = await Promise.all([
        approvals.answer("FFFF2222", "once", "telegram:1 (Ana)", 2000),
        approvals.answer("FFFF2222", "deny", "cli", 2000),
      ]);
      expect(answers.filter((answer) => answer !== null)).toHaveLength(1);
    });

    it("denies with state denied and stores no grant", async () => {
      await approvals.open(newRequest("GGGG2222"));
      expect(await approvals.answer("GGGG2222", "deny", "cli", 2000)).toMatchObject({
        state: "denied",
        decision: "deny",
      });
      expect(await approvals.isGranted("coder", "bash", "*")).toBe(false);
    });

    it("refuses an answer at or after the expiry, and expire marks it then only", async () => {
      const request = await approvals.open(newRequest("HHHH2222"));
      expect(await approvals.answer("HHHH2222", "once", "cli", request.expiresAt)).toBeNull();
      expect(await approvals.expire("HHHH2222", request.expiresAt - 1)).toEqual(request);
      const expired = await approvals.expire("HHHH2222", request.expiresAt);
      expect(expired).toMatchObject({
        state: "expired",
        decision: null,
        answeredBy: null,
        answeredAt: request.expiresAt,
      });
      expect(await approvals.expire("HHHH2222", request.expiresAt + 5)).toEqual(expired);
      expect(await approvals.pending()).toEqual([]);
      expect(await approvals.expire("NOSUCHID", 0)).toBeNull();
    });

    it("leaves an answered request alone when it is expired later", async () => {
      await approvals.open(newRequest("JJJJ2222"));
      const allowed = await approvals.answer("JJJJ2222", "once", "cli", 2000);
      expect(await approvals.expire("JJJJ2222", 10 * HOUR)).toEqual(allowed);
    });

    it("stores an always-allow as a grant of the agent, tool and pattern", async () => {
      await approvals.open(newRequest("KKKK2222", { tool: "write", pattern: "notes/**" }));
      await approvals.answer("KKKK2222", "always", "discord:9 (Bo)", 2000);
      expect(await approvals.isGranted("coder", "write", "notes/**")).toBe(true);
      expect(await approvals.isGranted("coder", "write", "**")).toBe(false);
      expect(await approvals.isGranted("coder", "edit", "notes/**")).toBe(false);
      expect(await approvals.isGranted("pickle", "write", "notes/**")).toBe(false);
      approvals = await handle.reopen();
      expect(await approvals.grants()).toEqual([
        {
          agentId: "coder",
          tool: "write",
          pattern: "notes/**",
          grantedAt: 2000,
          grantedBy: "discord:9 (Bo)",
        },
      ]);
    });

    it("revokes one pattern's grant, or every grant of a tool, returning what it removed", async () => {
      const grant = async (id: string, tool: string, pattern: string, at: number) => {
        await approvals.open(newRequest(id, { tool, pattern }));
        await approvals.answer(id, "always", "cli", at);
      };
      await grant("LLLL2222", "write", "notes/**", 2000);
      await grant("MMMM2222", "write", "**", 2001);
      await grant("NNNN2222", "bash", "*", 2002);
      expect(await approvals.revoke("coder", "write", "nope")).toEqual([]);
      expect(await approvals.revoke("coder", "write", "notes/**")).toMatchObject([
        { tool: "write", pattern: "notes/**" },
      ]);
      await grant("PPPP2222", "write", "docs/**", 2003);
      const removed = await approvals.revoke("coder", "write");
      expect(removed.map((gone) => gone.pattern).sort()).toEqual(["**", "docs/**"]);
      expect((await approvals.grants()).map((left) => left.tool)).toEqual(["bash"]);
    });
  });
}
