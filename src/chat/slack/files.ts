/**
 * Files people send on Slack: what the `files` of a message event become for the core
 * (attachments, or what picklebot cannot read), and their download.
 *
 *   a file with `url_private_download`   ─► an attachment: `image/*` an image, a Slack
 *                                            audio clip (`slack_audio`) a voice note,
 *                                            `audio/*` an audio file, anything else a document
 *   a video clip (`slack_video`)          ─► unreadable ("a video clip"), as Telegram's video notes
 *   a deleted or hidden file, a linked
 *   one (Google Drive…), or one Slack
 *   gives no download link for            ─► unreadable, named
 *
 * A download sends the bot token (`Authorization: Bearer xoxb-…`, which needs the scope
 * `files:read`) to Slack's own hosts only (`slack.com` and its subdomains, over HTTPS, or
 * the configured API root for a test fake), and follows at most {@link MAX_REDIRECTS}
 * redirects, each checked the same way (Enterprise Grid moves a download to another
 * `*.slack.com` host). Slack answers a request it will not serve with its sign-in page (a
 * redirect to it, then HTML), never with an error status: HTML where a file was expected is
 * a refusal, with the fix.
 */
import { ChatPlatformError } from "../../base/errors.js";
import type { ChatAttachment, ChatAttachmentKind } from "../../ports/index.js";

/** A file of a Slack message event, as far as the adapter reads it. */
export interface SlackFile {
  id?: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  /** `hosted`, `external` (a link to another service), `snippet`, `tombstone` (deleted), `hidden_by_limit`. */
  mode?: string;
  /** `slack_audio` or `slack_video` for a clip recorded in Slack. */
  subtype?: string;
  url_private_download?: string;
}

/** What a message's files become: attachments, and what cannot be read. */
export interface SlackFiles {
  attachments: ChatAttachment[];
  unreadable: string[];
}

/** Modes of a file Slack shows no content of. */
const GONE_MODES = new Set(["tombstone", "hidden_by_limit"]);

/** The attachments and the unreadable parts of a message's `files`. */
export function slackFilesOf(files: readonly SlackFile[]): SlackFiles {
  const read: SlackFiles = { attachments: [], unreadable: [] };
  for (const file of files) {
    const name = file.name ?? file.title;
    const named = name === undefined ? "a file" : `the file "${name}"`;
    const cannot = whyUnreadable(file, named);
    const source = file.url_private_download;
    if (cannot === undefined && source) read.attachments.push(toAttachment(file, source, name));
    else read.unreadable.push(cannot ?? named);
  }
  return read;
}

/** What a file that cannot be downloaded is, for the person; undefined for one that can. */
function whyUnreadable(file: SlackFile, named: string): string | undefined {
  if (file.subtype === "slack_video") return "a video clip";
  if (file.mode !== undefined && GONE_MODES.has(file.mode)) {
    return `${named} (deleted, or hidden by the workspace's plan)`;
  }
  if (file.mode === "external") return `${named} (a link to another service)`;
  if (!file.url_private_download) return `${named} (Slack gives bots no download link for it)`;
  return undefined;
}

function toAttachment(file: SlackFile, source: string, name: string | undefined): ChatAttachment {
  return {
    kind: kindOf(file),
    source,
    ...(name === undefined ? {} : { name }),
    ...(file.mimetype ? { mimeType: file.mimetype } : {}),
    ...(file.size === undefined ? {} : { size: file.size }),
  };
}

function kindOf(file: SlackFile): ChatAttachmentKind {
  if (file.subtype === "slack_audio") return "voice";
  if (file.mimetype?.startsWith("image/")) return "image";
  if (file.mimetype?.startsWith("audio/")) return "audio";
  return "document";
}

/** Redirects a download follows (each to a Slack host) before it gives up. */
export const MAX_REDIRECTS = 3;

/** What a download needs besides the file. */
export interface SlackDownload {
  botToken: string;
  /** The origin of a configured API root (a test fake), also trusted with the token. */
  extraOrigin?: string;
  signal: AbortSignal;
  /** Turns a network failure or a timeout into the adapter's error. */
  failed: (error: unknown) => ChatPlatformError;
}

/** The fix for a download Slack answered with its sign-in page. */
export const FILES_READ_FIX =
  "give the app the bot scope files:read (OAuth & Permissions, or the manifest in docs/guides/chat-platforms.md), reinstall it, and copy the new bot token";

/** The bytes of a file a person sent, from its `url_private_download`. */
export async function downloadSlackFile(
  attachment: ChatAttachment,
  options: SlackDownload,
): Promise<Uint8Array> {
  const name = attachment.name ?? "a file";
  let url = attachment.source;
  for (let hop = 0; ; hop += 1) {
    checkHost(url, name, options.extraOrigin);
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { authorization: `Bearer ${options.botToken}` },
        redirect: "manual",
        signal: options.signal,
      });
    } catch (error) {
      throw options.failed(error);
    }
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      if (hop === MAX_REDIRECTS) {
        throw refused(
          `Slack redirected the download of "${name}" more than ${MAX_REDIRECTS} times`,
        );
      }
      url = new URL(location, url).href;
      continue;
    }
    return await bytesOf(response, attachment, name);
  }
}

async function bytesOf(
  response: Response,
  attachment: ChatAttachment,
  name: string,
): Promise<Uint8Array> {
  if (!response.ok) {
    await response.body?.cancel();
    const retryAfterS = Number(response.headers.get("retry-after") ?? 0) || undefined;
    throw new ChatPlatformError(
      `slack: the download of "${name}" answered HTTP ${response.status}`,
      {
        context: { platform: "slack" },
        retryable: response.status === 429 || response.status >= 500,
        ...(retryAfterS === undefined ? {} : { retryAfterS }),
      },
    );
  }
  const type = response.headers.get("content-type") ?? "";
  if (type.startsWith("text/html") && !attachment.mimeType?.startsWith("text/html")) {
    await response.body?.cancel();
    throw refused(
      `Slack answered the download of "${name}" with its sign-in page: the bot token may not read files; ${FILES_READ_FIX}`,
    );
  }
  return new Uint8Array(await response.arrayBuffer());
}

/** Refuses, before the token is sent, a URL that is not Slack's. */
function checkHost(url: string, name: string, extraOrigin: string | undefined): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw refused(`the download link of "${name}" is not a URL`);
  }
  const slack =
    parsed.protocol === "https:" &&
    parsed.username === "" &&
    (parsed.hostname === "slack.com" || parsed.hostname.endsWith(".slack.com"));
  if (slack || parsed.origin === extraOrigin) return;
  throw refused(
    `the download link of "${name}" leads to ${parsed.origin}, not to Slack; the bot token is sent to Slack only`,
  );
}

function refused(reason: string): ChatPlatformError {
  return new ChatPlatformError(`slack: could not download: ${reason}`, {
    context: { platform: "slack" },
    retryable: false,
  });
}
