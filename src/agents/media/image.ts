/**
 * An image as the model APIs take it and charge sensibly for: JPEG, PNG, GIF or WebP, the
 * long edge at most {@link MAX_IMAGE_EDGE} px, under {@link MAX_IMAGE_BYTES}. Done with sharp
 * (libvips): docs/decisions/images-with-sharp.md says why. sharp is imported on the first
 * image, so commands that never see one do not load it.
 *
 * Memory: a decoded photo is width × height × 3 bytes (a 12 MP photo, 36 MB), so images
 * are prepared one at a time, with one libvips thread and no libvips cache; twenty
 * people sending photos at once then cost one decode, not twenty. sharp reads the stored
 * file itself, in strips, so the original is never loaded whole into memory either.
 */
import type { ImageMediaType } from "../../ports/index.js";

/** Longest edge sent: larger images are scaled down by the API anyway, and cost more to send. */
export const MAX_IMAGE_EDGE = 1568;

/** The API's limit of one image's size. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** A stored image file: where it is and its size in bytes. */
export interface ImageFile {
  path: string;
  bytes: number;
}

/** An image ready for the model. */
export interface PreparedImage {
  /** The image re-encoded for the model; absent when the file is sent as it is. */
  bytes?: Uint8Array;
  mediaType: ImageMediaType;
  width: number;
  height: number;
}

/** A file that is not an image sharp can read (damaged, or another format). */
export class UnreadableImage extends Error {}

const TYPES: Record<string, ImageMediaType> = {
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
};

/**
 * The image as the model gets it: as it is when it already fits, else turned upright,
 * scaled to fit {@link MAX_IMAGE_EDGE} and encoded as JPEG (PNG when it has transparency
 * and the PNG is under {@link MAX_IMAGE_BYTES}).
 * @throws UnreadableImage when the bytes are not an image.
 */
export function prepareImage(file: ImageFile): Promise<PreparedImage> {
  const prepared = preparing.then(() => prepareNow(file));
  preparing = prepared.then(
    () => undefined,
    () => undefined,
  );
  return prepared;
}

/** The image being prepared now: the next one waits for it. */
let preparing: Promise<void> = Promise.resolve();

/** sharp, set up once for one image at a time. */
async function loadSharp() {
  const { default: sharp } = await import("sharp");
  sharp.cache(false);
  sharp.concurrency(1);
  return sharp;
}

let sharpLoading: ReturnType<typeof loadSharp> | undefined;

async function prepareNow(file: ImageFile): Promise<PreparedImage> {
  sharpLoading ??= loadSharp();
  const sharp = await sharpLoading;
  let meta: Awaited<ReturnType<ReturnType<typeof sharp>["metadata"]>>;
  try {
    meta = await sharp(file.path, { failOn: "error" }).metadata();
  } catch (error) {
    throw new UnreadableImage(`not a readable image: ${(error as Error).message}`);
  }
  const type = TYPES[meta.format ?? ""];
  const { width = 0, height = 0 } = meta;
  const upright = (meta.orientation ?? 1) === 1;
  if (
    type &&
    upright &&
    Math.max(width, height) <= MAX_IMAGE_EDGE &&
    file.bytes < MAX_IMAGE_BYTES
  ) {
    return { mediaType: type, width, height };
  }
  try {
    const resized = sharp(file.path, { failOn: "error" }).rotate().resize({
      width: MAX_IMAGE_EDGE,
      height: MAX_IMAGE_EDGE,
      fit: "inside",
      withoutEnlargement: true,
    });
    const png = meta.hasAlpha ? await resized.png().toBuffer({ resolveWithObject: true }) : null;
    // A PNG that stays over the API's limit (noise, a photo with an alpha channel) goes as JPEG.
    const asPng = png !== null && png.data.byteLength < MAX_IMAGE_BYTES;
    const encoded = asPng
      ? png
      : await resized.flatten({ background: "#ffffff" }).jpeg({ quality: 85 }).toBuffer({
          resolveWithObject: true,
        });
    return {
      bytes: encoded.data,
      mediaType: asPng ? "image/png" : "image/jpeg",
      width: encoded.info.width,
      height: encoded.info.height,
    };
  } catch (error) {
    throw new UnreadableImage(`not a readable image: ${(error as Error).message}`);
  }
}
