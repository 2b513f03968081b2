/**
 * The rules every platform's files follow, checked once before a file is sent (and by
 * `send_file` before it is stored), so a file no platform would take fails the same way
 * everywhere and never reaches the network: not empty, within the platform's limit. And
 * how every platform hands over a file a person sent: as it arrives, chunk by chunk.
 */
import { ChatPlatformError } from "../base/errors.js";
import { CHAT_PLATFORMS, type ChatPlatformKind } from "../ports/index.js";

/** `12.3 MB`: a size for a person, in decimal megabytes as the platforms state theirs. */
export function formatFileSize(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/**
 * Why `platform` would refuse a file of `bytes` bytes named `name`, with what to do, or
 * undefined when it takes it.
 */
export function fileSizeProblem(
  platform: ChatPlatformKind,
  name: string,
  bytes: number,
): string | undefined {
  if (bytes === 0) return `"${name}" is empty; ${platform} refuses empty files`;
  const limit = CHAT_PLATFORMS[platform].maxFileBytes;
  if (bytes <= limit) return undefined;
  return `"${name}" is ${bytes} bytes (${formatFileSize(bytes)}), over ${platform}'s limit of ${limit} bytes (${formatFileSize(limit)}) per file; send a smaller file (compress or split it)`;
}

/**
 * Throws a {@link ChatPlatformError} (not retryable) when `platform` would refuse the
 * file: empty, or over its limit.
 */
export function checkOutgoingFile(
  platform: ChatPlatformKind,
  file: { name: string; content: Buffer },
): void {
  const problem = fileSizeProblem(platform, file.name, file.content.length);
  if (problem !== undefined) {
    throw new ChatPlatformError(`${platform}: cannot send a file: ${problem}`, {
      context: { platform },
    });
  }
}

/**
 * The body of a file download as it arrives, chunk by chunk, for the media store to write
 * as it comes (never the whole file in memory); a failure part way (the connection cut,
 * the timeout) becomes what `failed` makes of it.
 */
export async function* downloadChunks(
  response: Response,
  failed: (error: unknown) => Error,
): AsyncIterable<Uint8Array> {
  if (!response.body) return;
  try {
    for await (const chunk of response.body) yield chunk;
  } catch (error) {
    throw failed(error);
  }
}
