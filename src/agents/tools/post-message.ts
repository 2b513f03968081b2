import { z } from "zod";
import type { Tool } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";

/**
 * Where `post_message` puts a message: into the chat the job reports to, through the
 * durable outbox (the server), or onto the terminal (`picklebot chat`). Resolves a short
 * note for the model ("posted to telegram:42"); throws a ToolError when there is nowhere
 * to post.
 */
export type MessagePoster = (text: string) => Promise<string>;

const postMessageInput = z.object({
  text: z.string().trim().min(1).describe("The message to post, in Markdown."),
});

/** `post_message {text}`: posts an update before the final answer, where `post` says. */
export function createPostMessageTool(post: MessagePoster): Tool {
  return defineTool({
    name: "post_message",
    description:
      "Post a message into the chat this job reports to (the cron's deliver_to, or the " +
      "current chat). Use it for updates before your final answer.",
    input: postMessageInput,
    run: ({ text }) => post(text),
  });
}
