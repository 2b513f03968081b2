import type { Logger } from "../base/log.js";
import type { Frontend, ReplyStream, ReplyTarget } from "../ports/index.js";

/**
 * Writes finished replies and failures to the server log. Serves `console` targets
 * (jobs enqueued from a terminal) when the server runs without a terminal chat.
 */
export class LogFrontend implements Frontend {
  readonly kind = "console";
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  openReply(_target: ReplyTarget): ReplyStream {
    const logger = this.#logger;
    return {
      typing() {},
      update() {},
      toolCall(name, summary) {
        logger.debug({ tool: name }, summary);
      },
      async finish(text) {
        logger.info({ reply: text }, "reply");
      },
      async fail(message) {
        logger.warn({ error: message }, "reply failed");
      },
      close() {},
    };
  }
}
