/**
 * The reply of a heartbeat's tick (docs/guides/reminders.md, "Heartbeats"): nothing is
 * shown while it is written (it may turn out to be NOTHING_TO_REPORT, which must never
 * flash in the chat), and its final text is delivered only when it is something else.
 * The turn itself stays in its session's transcript and the usage ledger either way.
 */
import { isNothingToReport } from "../base/heartbeat.js";
import { heartbeatIdOfKey } from "../base/session-key.js";
import type { ReplyStream } from "../ports/index.js";

/** `reply` as a heartbeat tick's job of `sessionKey` shows it; any other job's unchanged. */
export function replyOfSession(sessionKey: string, reply: ReplyStream): ReplyStream {
  if (heartbeatIdOfKey(sessionKey) === undefined) return reply;
  return {
    typing() {},
    update() {},
    toolCall() {},
    async finish(text) {
      if (isNothingToReport(text)) reply.close();
      else await reply.finish(text);
    },
    fail: (message) => reply.fail(message),
    close: () => reply.close(),
  };
}
