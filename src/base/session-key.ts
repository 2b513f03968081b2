/**
 * Session keys: the text that names a conversation (`Job.sessionKey`, `Session.key`),
 * built and read only here. Stored keys keep these exact forms:
 *
 * - `telegram:<chat_id>`, `discord:<channel_id>`: a chat (the chat's address, see
 *   `chat-address.ts`); its jobs continue the chat's current session.
 * - `cron:<id>:<occurrence ISO>`: one scheduled run of a cron; `cron:<id>:manual:<now ISO>`
 *   a run started by hand (`cron run`, the dashboard's Run now). Older keys may stop at
 *   `cron:<id>`.
 * - `schedule:<id>:<occurrence ISO>`: one occurrence of a task the `schedule` tool set up.
 * - `heartbeat:<id>:<tick ISO>`: one tick of a chat's heartbeat (src/cron/heartbeat-worker.ts).
 * - `subagent:<depth>:<parent>:<call id>`: the conversation of a subagent call, `parent`
 *   the calling job's id (or, for a turn without a job, the calling session's key).
 * - `console:<user>`: `picklebot chat`.
 * - `web:<agent>:<id>`: a chat started in the dashboard.
 */
import type { ChatPlatformKind } from "../ports/index.js";
import { formatChatAddress, parseChatAddress } from "./chat-address.js";

/** What a session key names; see the file header for the text of each. */
export type SessionKey =
  | { kind: "chat"; platform: ChatPlatformKind; chatId: string }
  | {
      kind: "cron";
      cronId: string;
      /** Which run: null in an older key that names none. */
      run: CronRun | null;
    }
  | { kind: "schedule"; scheduleId: string; at: string }
  | { kind: "heartbeat"; heartbeatId: string; at: string }
  | { kind: "subagent"; depth: number; parent: string; callId: string }
  | { kind: "console"; user: string }
  | { kind: "web"; agentId: string; id: string };

/** One run of a cron, as its session key names it. */
export interface CronRun {
  /** Started by hand (`cron run`, Run now), outside the schedule. */
  manual: boolean;
  /** The occurrence (ISO time), or for a manual run when it was started. */
  at: string;
}

/** The text of a session key. */
export function formatSessionKey(key: SessionKey): string {
  switch (key.kind) {
    case "chat":
      return formatChatAddress(key);
    case "cron": {
      if (key.run === null) return `cron:${key.cronId}`;
      return `${cronKeyPrefix(key.cronId)}${key.run.manual ? "manual:" : ""}${key.run.at}`;
    }
    case "schedule":
      return `schedule:${key.scheduleId}:${key.at}`;
    case "heartbeat":
      return `heartbeat:${key.heartbeatId}:${key.at}`;
    case "subagent":
      return `subagent:${key.depth}:${key.parent}:${key.callId}`;
    case "console":
      return `console:${key.user}`;
    case "web":
      return `web:${key.agentId}:${key.id}`;
    default:
      return key satisfies never;
  }
}

/** What every key of a cron's runs starts with (`cron:<id>:`), to list them. */
export function cronKeyPrefix(cronId: string): string {
  return `cron:${cronId}:`;
}

/** The session key of a chat: `telegram:<chat_id>`, `discord:<channel_id>`. */
export function chatSessionKey(chat: { platform: ChatPlatformKind; chatId: string }): string {
  return formatSessionKey({ kind: "chat", ...chat });
}

/** The session key of `picklebot chat` run by `user`: `console:<user>`. */
export function consoleSessionKey(user: string): string {
  return formatSessionKey({ kind: "console", user });
}

/** The session key of one scheduled occurrence of a cron: `cron:<id>:<occurrence ISO>`. */
export function cronOccurrenceKey(cronId: string, occurrenceMs: number): string {
  const at = new Date(occurrenceMs).toISOString();
  return formatSessionKey({ kind: "cron", cronId, run: { manual: false, at } });
}

/** The session key of a run started by hand at `nowMs`: `cron:<id>:manual:<now ISO>`. */
export function cronManualKey(cronId: string, nowMs: number): string {
  const at = new Date(nowMs).toISOString();
  return formatSessionKey({ kind: "cron", cronId, run: { manual: true, at } });
}

/** The session key of one occurrence of a scheduled task: `schedule:<id>:<occurrence ISO>`. */
export function scheduleOccurrenceKey(scheduleId: string, occurrenceMs: number): string {
  const at = new Date(occurrenceMs).toISOString();
  return formatSessionKey({ kind: "schedule", scheduleId, at });
}

/** The session key of one tick of a heartbeat: `heartbeat:<id>:<tick ISO>`. */
export function heartbeatTickKey(heartbeatId: string, tickMs: number): string {
  const at = new Date(tickMs).toISOString();
  return formatSessionKey({ kind: "heartbeat", heartbeatId, at });
}

/** The heartbeat id of a heartbeat tick's key, or undefined for any other key. */
export function heartbeatIdOfKey(text: string): string | undefined {
  const key = parseSessionKey(text);
  return key?.kind === "heartbeat" ? key.heartbeatId : undefined;
}

/** True when `text` is the key of a chat's own conversation (not a cron, schedule, subagent…). */
export function isChatSessionKey(text: string): boolean {
  return parseSessionKey(text)?.kind === "chat";
}

/** The session key of a chat started in the dashboard: `web:<agent>:<id>`. */
export function webSessionKey(agentId: string, id: string): string {
  return formatSessionKey({ kind: "web", agentId, id });
}

/** True when `text` is the key of a chat started in the dashboard. */
export function isWebSessionKey(text: string): boolean {
  return parseSessionKey(text)?.kind === "web";
}

/** True when `text` is the key of a cron run started by hand. */
export function isManualCronKey(text: string): boolean {
  const key = parseSessionKey(text);
  return key?.kind === "cron" && key.run?.manual === true;
}

/** A cron id: its file name in crons/ without `.yaml`, in the text a key can carry. */
export const CRON_ID = /^[A-Za-z0-9_-]+$/;
/** Something between colons: not empty, no colon. */
const PART = /^[^:]+$/;

/**
 * The session key `text` is, or null when it is none of the forms of the file header (a
 * key some test or older tool made up, or a malformed one).
 */
export function parseSessionKey(text: string): SessionKey | null {
  const separator = text.indexOf(":");
  if (separator <= 0) return null;
  const prefix = text.slice(0, separator);
  const rest = text.slice(separator + 1);
  switch (prefix) {
    case "cron":
      return parseCronKey(rest);
    case "schedule":
    case "heartbeat":
      return parseOccurrenceKey(prefix, rest);
    case "subagent":
      return parseSubagentKey(rest);
    case "console":
      return rest === "" ? null : { kind: "console", user: rest };
    case "web":
      return parseWebKey(rest);
    default: {
      const chat = parseChatAddress(text);
      return chat ? { kind: "chat", ...chat } : null;
    }
  }
}

/** `<id>`, `<id>:<at>` or `<id>:manual:<at>`. */
function parseCronKey(rest: string): SessionKey | null {
  const separator = rest.indexOf(":");
  const cronId = separator < 0 ? rest : rest.slice(0, separator);
  if (!CRON_ID.test(cronId)) return null;
  if (separator < 0) return { kind: "cron", cronId, run: null };
  let at = rest.slice(separator + 1);
  const manual = at.startsWith("manual:");
  if (manual) at = at.slice("manual:".length);
  return at === "" ? null : { kind: "cron", cronId, run: { manual, at } };
}

/** `<id>:<at>` of a schedule's or a heartbeat's key. */
function parseOccurrenceKey(kind: "schedule" | "heartbeat", rest: string): SessionKey | null {
  const separator = rest.indexOf(":");
  const id = rest.slice(0, separator);
  const at = rest.slice(separator + 1);
  if (separator <= 0 || !CRON_ID.test(id) || at === "") return null;
  return kind === "schedule" ? { kind, scheduleId: id, at } : { kind, heartbeatId: id, at };
}

/** `<depth>:<parent>:<call id>`; the parent may itself be a key, with colons. */
function parseSubagentKey(rest: string): SessionKey | null {
  const first = rest.indexOf(":");
  const last = rest.lastIndexOf(":");
  if (first < 0 || last === first) return null;
  const depth = rest.slice(0, first);
  const parent = rest.slice(first + 1, last);
  const callId = rest.slice(last + 1);
  if (!/^\d+$/.test(depth) || parent === "" || !PART.test(callId)) return null;
  return { kind: "subagent", depth: Number(depth), parent, callId };
}

/** `<agent>:<id>`. */
function parseWebKey(rest: string): SessionKey | null {
  const [agentId, id, extra] = rest.split(":");
  if (extra !== undefined || !agentId || !id) return null;
  return { kind: "web", agentId, id };
}

/** The cron id of a cron run's key, or undefined for any other key. */
export function cronIdOfKey(text: string): string | undefined {
  const key = parseSessionKey(text);
  return key?.kind === "cron" ? key.cronId : undefined;
}

/** How deep the conversation of a key is nested: 0 unless it is a subagent's. */
export function subagentDepthOf(text: string): number {
  const key = parseSessionKey(text);
  return key?.kind === "subagent" ? key.depth : 0;
}
