/**
 * The files of a chat message read into its turn (src/agents/media/intake.ts), in process
 * on a temp history folder, with the fake speech-to-text server: a resumed job neither
 * downloads nor transcribes again, and a transient failure is retried while attempts are
 * left, then told. A download is written to the store as it arrives, chunk by chunk.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MediaIntake } from "../../src/agents/media/intake.js";
import { MediaStore } from "../../src/agents/media/store.js";
import { ChatPlatformError, PicklebotError } from "../../src/base/errors.js";
import { silentLogger } from "../../src/base/log.js";
import type { ChatAttachment, FileDownload } from "../../src/ports/index.js";
import { type FakeTranscription, startFakeTranscription } from "../fakes/transcription.js";
import { photo, voiceNote } from "../helpers/media.js";

let dir: string;
let speech: FakeTranscription;
let downloads: string[];
let failNext: Error | null;
/** What the platform hands over for a download. (Default: a voice note, whole) */
let serve: () => FileDownload;

function intake(pricePerMinute?: number): MediaIntake {
  const price = pricePerMinute === undefined ? {} : { price_per_minute: pricePerMinute };
  return new MediaIntake({
    store: new MediaStore(dir),
    download: async (_platform, attachment) => {
      downloads.push(attachment.source);
      if (failNext) {
        const error = failNext;
        failNext = null;
        throw error;
      }
      return serve();
    },
    speech: { base_url: speech.url, api_key: "stt-test-key", model: "whisper-1", ...price },
    maxTextChars: 1000,
    logger: silentLogger(),
  });
}

const voice: ChatAttachment = { kind: "voice", source: "voice-1", mimeType: "audio/ogg" };
const job = (lastAttempt = false, id = "j1", attachments = [voice]) => ({
  id,
  attachments,
  platform: "telegram" as const,
  lastAttempt,
});

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "picklebot-media-"));
  speech = await startFakeTranscription();
  downloads = [];
  failNext = null;
  serve = voiceNote;
});

/** The names in the history's media folder (files being written end in `.partial`). */
function mediaFiles(): string[] {
  try {
    return readdirSync(join(dir, "media")).filter((name) => name !== "sources");
  } catch {
    return [];
  }
}

const image: ChatAttachment = { kind: "image", source: "photo-1", mimeType: "image/jpeg" };
const imageJob = (lastAttempt = false) => ({ ...job(lastAttempt), attachments: [image] });

afterEach(async () => {
  await speech.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("MediaIntake", () => {
  it("charges a priced transcription to the job that had it made, resumed or not, once", async () => {
    await speech.close();
    speech = await startFakeTranscription({ seconds: 90 });
    const signal = new AbortController().signal;
    const charge = { model: "speech_to_text:whisper-1", usd: 0.009 };

    const first = await intake(0.006).read(job(), signal);
    // A crash before the checkpoint: the attempt after it reads the stored transcript.
    const resumed = await intake(0.006).read(job(), signal);
    // The same voice note sent again, or twice in one message: transcribed before, free.
    const other = await intake(0.006).read(job(false, "j2", [voice, voice]), signal);

    expect(first.charge?.model).toBe(charge.model);
    expect(first.charge?.usd).toBeCloseTo(charge.usd, 10);
    expect(resumed.charge).toEqual(first.charge);
    expect(other.charge).toBeUndefined();
    expect(speech.calls).toHaveLength(1);
  });

  it("prices a transcription by the platform's duration when the service does not say", async () => {
    const timed = { ...voice, durationS: 30 };
    const read = await intake(0.006).read(job(false, "j1", [timed]), new AbortController().signal);
    expect(read.charge?.usd).toBeCloseTo(0.003, 10);
  });

  it("charges nothing when nobody says how long the audio is", async () => {
    const read = await intake(0.006).read(job(), new AbortController().signal);
    expect(read.charge).toBeUndefined();
    expect(speech.calls).toHaveLength(1);
  });

  it("charges nothing without a price", async () => {
    const timed = { ...voice, durationS: 30 };
    const read = await intake().read(job(false, "j1", [timed]), new AbortController().signal);
    expect(read.charge).toBeUndefined();
    expect(speech.calls).toHaveLength(1);
  });

  it("reads a voice note once: a resumed job neither downloads nor transcribes it again", async () => {
    const first = await intake().read(job(), new AbortController().signal);
    const again = await intake().read(job(), new AbortController().signal);

    expect(first.content).toEqual([
      { type: "text", text: "[Transcription of a voice note]\npick up some pickles" },
    ]);
    expect(again).toEqual(first);
    expect(downloads).toEqual(["voice-1"]);
    expect(speech.calls).toHaveLength(1);
  });

  it("throws a transient download failure while attempts are left, and tells it on the last", async () => {
    failNext = new ChatPlatformError("telegram: 502 Bad Gateway", { retryable: true });
    await expect(intake().read(job(), new AbortController().signal)).rejects.toMatchObject({
      retryable: true,
    });
    failNext = new ChatPlatformError("telegram: 502 Bad Gateway", { retryable: true });
    const last = await intake().read(job(true), new AbortController().signal);
    expect(last.notices).toEqual([
      "I could not read the voice note: the download failed: telegram: 502 Bad Gateway",
    ]);
  });

  it("retries a speech service that is down while attempts are left", async () => {
    speech.down = true;
    const attempt = intake().read(job(), new AbortController().signal);
    await expect(attempt).rejects.toBeInstanceOf(PicklebotError);
    await expect(attempt).rejects.toMatchObject({ retryable: true });
    speech.down = false;
    const next = await intake().read(job(), new AbortController().signal);
    expect(next.notices).toEqual([]);
    // Downloaded once: the retry found the file stored.
    expect(downloads).toEqual(["voice-1"]);
  });

  it("writes a download to the store as it arrives: each chunk is on disk before the next is asked for", async () => {
    const bytes = await photo(2000, 1500);
    const chunkBytes = 64 * 1024;
    const onDiskBeforeEachChunk: number[] = [];
    serve = async function* () {
      for (let at = 0; at < bytes.length; at += chunkBytes) {
        const partial = mediaFiles().filter((name) => name.endsWith(".partial"));
        onDiskBeforeEachChunk.push(
          partial.length === 0 ? 0 : statSync(join(dir, "media", partial[0] ?? "")).size,
        );
        yield bytes.subarray(at, at + chunkBytes);
      }
    };
    const read = await intake().read(imageJob(), new AbortController().signal);

    expect(read.notices).toEqual([]);
    expect(read.content[0]).toMatchObject({ type: "image", width: 1568, height: 1176 });
    const chunks = onDiskBeforeEachChunk.length;
    expect(onDiskBeforeEachChunk).toEqual(Array.from({ length: chunks }, (_, n) => n * chunkBytes));
    const original = mediaFiles().find(
      (name) => statSync(join(dir, "media", name)).size === bytes.length,
    );
    expect(original && readFileSync(join(dir, "media", original)).equals(bytes)).toBe(true);
    expect(mediaFiles().filter((name) => name.endsWith(".partial"))).toEqual([]);
  });

  it("retries a download cut off part way while attempts are left, keeping nothing of it", async () => {
    const bytes = await photo(800, 600);
    let cutOff = true;
    serve = async function* () {
      yield bytes.subarray(0, 1000);
      if (cutOff) throw new ChatPlatformError("telegram: terminated", { retryable: true });
      yield bytes.subarray(1000);
    };
    await expect(intake().read(imageJob(), new AbortController().signal)).rejects.toMatchObject({
      retryable: true,
    });
    expect(mediaFiles()).toEqual([]);

    cutOff = false;
    const next = await intake().read(imageJob(), new AbortController().signal);
    expect(next.notices).toEqual([]);
    expect(next.content[0]).toMatchObject({ type: "image", width: 800, height: 600 });
    expect(downloads).toEqual(["photo-1", "photo-1"]);
  });

  it("refuses a file that goes over the limit while it downloads (its size was not given), storing nothing", async () => {
    const megabyte = Buffer.alloc(1024 * 1024, 7);
    serve = async function* () {
      for (let n = 0; n < 40; n += 1) yield megabyte;
    };
    const document: ChatAttachment = { kind: "document", source: "big-1", name: "big.bin" };
    const read = await intake().read(
      { ...job(), attachments: [document] },
      new AbortController().signal,
    );

    expect(read.notices).toEqual([
      "I could not read big.bin: it is over 32.0 MB, the largest file I take",
    ]);
    expect(mediaFiles()).toEqual([]);
  });
});
