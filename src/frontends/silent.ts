import type { Frontend, ReplyStream, ReplyTarget } from "../ports/index.js";

const silentReply: ReplyStream = {
  typing() {},
  update() {},
  toolCall() {},
  finish: async () => {},
  fail: async () => {},
  close() {},
};

/** Shows nothing: for cron jobs whose result is only kept in history. */
export class SilentFrontend implements Frontend {
  readonly kind = "silent";

  openReply(_target: ReplyTarget): ReplyStream {
    return silentReply;
  }
}
