import { createHash } from "node:crypto";
import { z } from "zod";
import { CHAT_ADDRESS_FORMS, chatAddressOf, formatChatAddress } from "../../base/chat-address.js";
import { ToolError } from "../../base/errors.js";
import type { ChatPlatformKind, ReplyTarget, Tool } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";

/** Puts a message in the outbox of a chat; true once the platform confirmed it. */
export type PostToChat = (
  platform: ChatPlatformKind,
  chatId: string,
  text: string,
  dedupeKey: string,
) => Promise<boolean>;

/** Options of {@link createPostMessageTool}. */
export interface PostMessageToolOptions {
  /** Where the job reports: a cron's `deliver_to`, or the chat the conversation is in. */
  target: ReplyTarget;
  /** The job running the tool; with the text it makes a repeated post (a resumed job) a no-op. */
  jobId: string;
  post: PostToChat;
}

const postMessageInput = z.object({
  text: z.string().trim().min(1).describe("The message to post, in Markdown."),
});

/**
 * `post_message {text}`: posts into the chat the job reports to, through the durable
 * outbox (delivered once, retried until the platform confirms it).
 */
export function createPostMessageTool(options: PostMessageToolOptions): Tool {
  return defineTool({
    name: "post_message",
    description:
      "Post a message into the chat this job reports to (the cron's deliver_to, or the " +
      "current chat). Use it for updates before your final answer.",
    input: postMessageInput,
    async run({ text }) {
      const chat = chatAddressOf(options.target);
      if (!chat) {
        throw new ToolError(
          `post_message: this job has no chat to post to; give its cron a deliver_to (${CHAT_ADDRESS_FORMS})`,
        );
      }
      const digest = createHash("sha256").update(text).digest("hex").slice(0, 16);
      const delivered = await options.post(
        chat.platform,
        chat.chatId,
        text,
        `post:${options.jobId}:${digest}`,
      );
      const where = formatChatAddress(chat);
      return delivered
        ? `posted to ${where}`
        : `queued for ${where}; the platform did not confirm it yet and it will be retried`;
    },
  });
}
