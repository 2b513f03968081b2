/** The Discord adapter meets the ChatPlatform contract, against the fake REST API and gateway. */
import { discordHarness } from "./discord.harness.js";
import { chatPlatformContract } from "./platform.contract.js";

chatPlatformContract("discord", discordHarness, {
  optOut: {
    redelivery:
      "the gateway sends each event once; a message or press the handler could not store is logged and lost",
  },
});
