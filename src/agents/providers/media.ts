/**
 * The files a request's image and document blocks refer to, read once each for an
 * adapter that sends their bytes (Anthropic's base64 sources, OpenAI's data URLs). A
 * block holds only a {@link MediaRef}; the bytes are read from the media folder when the
 * request is sent.
 */
import { ModelError } from "../../base/errors.js";
import type {
  DocumentBlock,
  ImageBlock,
  MediaReader,
  MediaRef,
  RequestMessage,
} from "../../ports/index.js";

/** The base64 of every file the request's loaded blocks refer to, by SHA-256. */
export type LoadedMedia = ReadonlyMap<string, string>;

/** No file loaded: every image and document is described as text. */
export const NO_MEDIA: LoadedMedia = new Map();

/**
 * Reads the files of the request's image and document blocks that `wanted` keeps (all
 * of them by default), each once; fails, not retryable, when there are some and no reader.
 */
export async function loadMedia(
  messages: readonly RequestMessage[],
  readMedia: MediaReader | undefined,
  wanted: (block: ImageBlock | DocumentBlock) => boolean = () => true,
): Promise<LoadedMedia> {
  const refs = new Map<string, MediaRef>();
  for (const message of messages) {
    for (const block of message.content) {
      if ((block.type === "image" || block.type === "document") && wanted(block))
        refs.set(block.media.sha256, block.media);
    }
  }
  const loaded = new Map<string, string>();
  if (refs.size === 0) return loaded;
  if (!readMedia) {
    throw new ModelError(
      "This request holds files, but the provider was given no way to read them.",
      { retryable: false },
    );
  }
  for (const [sha256, ref] of refs) {
    const bytes = await readMedia(ref);
    // A view, not a copy: the file's bytes are in memory once, while their base64 is made.
    loaded.set(
      sha256,
      Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"),
    );
  }
  return loaded;
}
