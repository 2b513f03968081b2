import { extname } from "node:path";
import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import {
  MAX_FILE_CAPTION_LENGTH,
  type OutgoingFile,
  type OutgoingFileKind,
  type Tool,
  type ToolContext,
} from "../../ports/index.js";
import { defineTool } from "./define-tool.js";
import { openInWorkspace } from "./workspace-file.js";
import { fileSystemError } from "./workspace-path.js";

/**
 * Where `send_file` sends a file: into the chat the job reports to, through the durable
 * outbox (the server). Resolves a short note for the model ("sent report.pdf to
 * telegram:42"); throws a ToolError when there is nowhere to send.
 */
export interface FileSender {
  /**
   * Why the chat would refuse a file of `bytes` bytes named `name` (empty, over the
   * platform's limit), with what to do; undefined when it takes it. Asked before the file
   * is read, so a huge file is never loaded.
   */
  refusal(name: string, bytes: number): string | undefined;
  /**
   * Stores the file for the chat and sends it, once per tool call (`callId`: a resumed
   * job that runs the same call again, even after the file changed, sends nothing new);
   * resolves a note for the model.
   */
  send(file: OutgoingFile, callId: string | undefined): Promise<string>;
}

/** Media types by file extension; a file of any other extension is `application/octet-stream`. */
const MEDIA_TYPES: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
  ".gif": "image/gif",
  ".pdf": "application/pdf",
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".json": "application/json",
  ".html": "text/html",
  ".zip": "application/zip",
  ".ogg": "audio/ogg",
  ".opus": "audio/ogg",
  ".mp3": "audio/mpeg",
  ".wav": "audio/wav",
  ".mp4": "video/mp4",
};

/** The images a chat shows inline (Telegram's `sendPhoto` takes these; a GIF goes as a file). */
const PHOTO_TYPES = new Set(["image/png", "image/jpeg", "image/webp"]);

const sendFileInput = z.object({
  path: z.string().min(1).describe("The file to send, relative to the workspace."),
  caption: z
    .string()
    .max(MAX_FILE_CAPTION_LENGTH)
    .optional()
    .describe(
      `A short text shown with the file, plain text, at most ${MAX_FILE_CAPTION_LENGTH} characters.`,
    ),
});

/**
 * `send_file {path, caption?}`: sends a workspace file into the job's chat, where `sender`
 * says; an image (PNG, JPEG, WebP) shows as a photo, anything else as a document. The
 * path rules are the file tools': inside the workspace, never a protected path.
 */
export function createSendFileTool(sender: FileSender | undefined): Tool {
  return defineTool({
    name: "send_file",
    description:
      "Send a file from the workspace (a report, an image you made) into the chat this job " +
      "reports to (the cron's deliver_to, or the current chat). Images show as photos.",
    input: sendFileInput,
    run: async ({ path, caption }, context) => {
      if (!sender) {
        throw new ToolError(
          "send_file: this conversation has no chat to send files to; files go to Telegram, Discord and Slack chats, the dashboard's web chat, and a cron's deliver_to",
        );
      }
      const file = await readWorkspaceFile(context, path, sender);
      return sender.send({ ...file, ...(caption ? { caption } : {}) }, context.callId);
    },
  });
}

/** The file at `path` as it will be sent, after the path rules and the chat's size limit. */
async function readWorkspaceFile(
  context: ToolContext,
  path: string,
  sender: FileSender,
): Promise<OutgoingFile> {
  const opened = await openInWorkspace(context, path, "read");
  try {
    if (!opened.stats.isFile()) throw new ToolError(`"${path}" is not a file`);
    const name = path.split("/").at(-1) ?? path;
    const refusal = sender.refusal(name, opened.stats.size);
    if (refusal !== undefined) throw new ToolError(`send_file: ${refusal}`);
    const content = await opened.handle.readFile().catch((thrown: unknown) => {
      throw fileSystemError(thrown, path);
    });
    const mediaType = MEDIA_TYPES[extname(name).toLowerCase()] ?? "application/octet-stream";
    const kind: OutgoingFileKind = PHOTO_TYPES.has(mediaType) ? "photo" : "document";
    return { kind, name, mediaType, content };
  } finally {
    await opened.handle.close();
  }
}
