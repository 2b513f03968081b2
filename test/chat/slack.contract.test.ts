/** The Slack adapter meets the ChatPlatform contract, against the fake Web API and Socket Mode. */
import { chatPlatformContract } from "./platform.contract.js";
import { slackHarness } from "./slack.harness.js";

chatPlatformContract("slack", slackHarness, {
  optOut: {
    idempotentSend:
      "chat.postMessage takes no idempotency key (client_msg_id is for people's messages); a repeated send makes a second message",
    typing: "Slack shows no typing indicator for a bot outside its assistant threads",
    silentAnswer:
      "Slack takes the envelope's ack, sent once the press is stored, as the answer; a silent acknowledgeChoice has nothing left to send",
  },
});
