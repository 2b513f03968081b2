/** The Telegram adapter meets the ChatPlatform contract, against the fake Bot API. */

import { chatPlatformContract } from "./platform.contract.js";
import { telegramHarness } from "./telegram.harness.js";

chatPlatformContract("telegram", telegramHarness, {
  optOut: {
    ignoresBots:
      "Telegram never hands a bot its own messages, nor other bots' (Bot API FAQ: bots cannot see messages from other bots)",
    idempotentSend:
      "the Bot API takes no idempotency key; a repeated sendMessage makes a second message",
  },
});
