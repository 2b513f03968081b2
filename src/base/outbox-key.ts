/**
 * Outbox keys: the `dedupeKey` of an outbox entry (one entry per key, so a reply stored
 * twice is sent once), built and read only here. Stored keys keep these exact forms:
 *
 * - `job:<job id>`: a job's reply.
 * - `reply:<uuid>`: a reply of no job (sent once, never resumed).
 * - `post:<job id>:<digest>`: a `post_message` of a job, once per text (the first 16 hex
 *   digits of the text's SHA-256).
 * - `file:<job id>:<digest>`: a `send_file` of a job, once per tool call and caption (16
 *   hex digits of their SHA-256); its text is a stored file's description
 *   (src/chat/outbox-files.ts), not a message.
 * - `voice:<job id>`: a job's reply spoken (text to speech), a file entry like `file:`.
 * - `bus:<platform>:<message id>`: the chat's answer to a message (a command, a refusal).
 * - `budget:<scope>:<period>:<period start ms>:<reached|warning>`: a budget notice, once
 *   per budget, period and level (`scope` is `the workspace` or `agent <id>`).
 * - `schedule:<schedule id>:<occurrence ms>`: a reminder's message, once per occurrence.
 * - `heartbeat-paused:<heartbeat id>:<period start ms>`: telling the owner a heartbeat
 *   stopped at a reached budget, once per heartbeat and budget period.
 * - `heartbeat-unpriced:<heartbeat id>:<digest>`: telling the owner a heartbeat stopped
 *   because its agent's model has no price under a budget, once per heartbeat and model
 *   (16 hex digits of the model's SHA-256: a model id may hold a colon).
 * - `paired:<platform>:<user id>:<approved at ms>`: telling a person the owner let them in.
 */
import type { ChatPlatformKind } from "../ports/index.js";
import { isChatPlatform } from "./chat-address.js";

/** What an outbox key names; see the file header for the text of each. */
export type OutboxKey =
  | { kind: "job"; jobId: string }
  | { kind: "reply"; id: string }
  | { kind: "post"; jobId: string; digest: string }
  | { kind: "file"; jobId: string; digest: string }
  | { kind: "voice"; jobId: string }
  | { kind: "bus"; platform: ChatPlatformKind; messageId: string }
  | { kind: "schedule"; scheduleId: string; occurrenceMs: number }
  | { kind: "heartbeat-paused"; heartbeatId: string; periodStart: number }
  | { kind: "heartbeat-unpriced"; heartbeatId: string; digest: string }
  | { kind: "paired"; platform: ChatPlatformKind; userId: string; approvedAt: number }
  | {
      kind: "budget";
      scope: string;
      period: "day" | "month";
      periodStart: number;
      level: "reached" | "warning";
    };

/** The text of an outbox key. */
export function formatOutboxKey(key: OutboxKey): string {
  switch (key.kind) {
    case "job":
      return `job:${key.jobId}`;
    case "reply":
      return `reply:${key.id}`;
    case "post":
    case "file":
      return `${key.kind}:${key.jobId}:${key.digest}`;
    case "voice":
      return `voice:${key.jobId}`;
    case "bus":
      return `bus:${key.platform}:${key.messageId}`;
    case "schedule":
      return `schedule:${key.scheduleId}:${key.occurrenceMs}`;
    case "heartbeat-paused":
      return `heartbeat-paused:${key.heartbeatId}:${key.periodStart}`;
    case "heartbeat-unpriced":
      return `heartbeat-unpriced:${key.heartbeatId}:${key.digest}`;
    case "paired":
      return `paired:${key.platform}:${key.userId}:${key.approvedAt}`;
    case "budget":
      return `budget:${key.scope}:${key.period}:${key.periodStart}:${key.level}`;
    default:
      return key satisfies never;
  }
}

/** Something between colons: not empty, no colon. */
const PART = /^[^:]+$/;

/** The outbox key `text` is, or null when it is none of the forms of the file header. */
export function parseOutboxKey(text: string): OutboxKey | null {
  const [kind, ...parts] = text.split(":");
  switch (kind) {
    case "job":
    case "voice":
    case "reply": {
      const [id, extra] = parts;
      if (id === undefined || extra !== undefined || !PART.test(id)) return null;
      return kind === "reply" ? { kind, id } : { kind, jobId: id };
    }
    case "post":
    case "file": {
      const [jobId, digest, extra] = parts;
      if (!jobId || !digest || extra !== undefined) return null;
      return { kind, jobId, digest };
    }
    case "bus": {
      const [platform, messageId, extra] = parts;
      if (!isChatPlatform(platform) || !messageId || extra !== undefined) return null;
      return { kind, platform, messageId };
    }
    case "paired": {
      const [platform, userId, at, extra] = parts;
      const approvedAt = Number(at);
      if (!isChatPlatform(platform) || !userId || extra !== undefined) return null;
      if (!Number.isSafeInteger(approvedAt) || String(approvedAt) !== at) return null;
      return { kind, platform, userId, approvedAt };
    }
    case "schedule": {
      const [scheduleId, at, extra] = parts;
      const occurrenceMs = Number(at);
      if (!scheduleId || extra !== undefined || !/^\d+$/.test(at ?? "")) return null;
      return { kind, scheduleId, occurrenceMs };
    }
    case "heartbeat-paused": {
      const [heartbeatId, start, extra] = parts;
      if (!heartbeatId || extra !== undefined || !/^\d+$/.test(start ?? "")) return null;
      return { kind, heartbeatId, periodStart: Number(start) };
    }
    case "heartbeat-unpriced": {
      const [heartbeatId, digest, extra] = parts;
      if (!heartbeatId || !digest || extra !== undefined) return null;
      return { kind, heartbeatId, digest };
    }
    case "budget":
      return parseBudgetKey(parts);
    default:
      return null;
  }
}

/** `<scope>:<period>:<period start>:<level>`, read from the end: the scope is free text. */
function parseBudgetKey(parts: string[]): OutboxKey | null {
  const level = parts.at(-1);
  const start = parts.at(-2) ?? "";
  const period = parts.at(-3);
  const scope = parts.slice(0, -3).join(":");
  if (level !== "reached" && level !== "warning") return null;
  if (period !== "day" && period !== "month") return null;
  if (!/^\d+$/.test(start) || scope === "") return null;
  return { kind: "budget", scope, period, periodStart: Number(start), level };
}

/** The job whose reply, post, file or voice an entry holds, or null for any other entry. */
export function jobIdOfOutboxKey(text: string): string | null {
  const key = parseOutboxKey(text);
  return key && "jobId" in key ? key.jobId : null;
}

/** Whether the entry of this key holds a stored file (`file:`, `voice:`), not a text. */
export function isFileOutboxKey(text: string): boolean {
  const kind = parseOutboxKey(text)?.kind;
  return kind === "file" || kind === "voice";
}
