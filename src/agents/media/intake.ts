/**
 * What the files of a chat message become in the person's turn, as a step of the job
 * (never of the poller, so a slow download never holds up the chat):
 *
 *   each attachment ─► its bytes: stored before (the source was downloaded already) or
 *                      downloaded now, then stored content-addressed (store.ts)
 *     image           ─► prepared (image.ts) ─► an image block
 *     PDF             ─► checked (pdf.ts)    ─► a document block
 *     voice, audio    ─► transcribed once (speech.ts; the transcript is stored) ─► text,
 *                        marked as the transcription of a voice note; with
 *                        `speech_to_text.price_per_minute`, what the transcriptions this
 *                        job had made cost (also those made by an attempt before a crash)
 *                        is returned, for the ledger row of the message they are part of
 *     text-like file  ─► its text, cut like a tool result
 *     anything else   ─► described by name, type and size
 *
 * A file that cannot be read (too big, damaged, encrypted, a codec the service refuses,
 * no speech service, the service down on the job's last attempt) becomes a notice for
 * the person and a note for the model, and is logged; the message's text is still
 * answered. A transient failure with attempts left throws a retryable error: the job is
 * tried again later, and what was downloaded or transcribed is not done again.
 *
 * Memory (bench/media.js, docs/decisions/media-memory.md): a download is written to the
 * store chunk by chunk as it arrives, an image is read by sharp from its stored file, and
 * the garbage a message's files leave is collected once they are read.
 */
import { collectGarbage } from "../../base/collect-garbage.js";
import { formatBytes } from "../../base/content.js";
import { PicklebotError, toError } from "../../base/errors.js";
import type { Logger } from "../../base/log.js";
import type { SpeechToTextConfig } from "../../config/index.js";
import type {
  ChatAttachment,
  ChatPlatformKind,
  FileDownload,
  MediaRef,
  RequestContentBlock,
} from "../../ports/index.js";
import { prepareImage, UnreadableImage } from "./image.js";
import { checkPdf } from "./pdf.js";
import { TranscriptionError, transcribe } from "./speech.js";
import { type MediaStore, MediaTooLarge, type StoredMedia } from "./store.js";

/** The largest file picklebot takes from a chat (the model's limit for a PDF). */
export const MAX_FILE_BYTES = 32 * 1024 * 1024;

/** What a voice note's transcript is marked with, for the model and the transcripts. */
export const VOICE_NOTE_MARK = "[Transcription of a voice note]";

/** Whether a text block is the transcription of a voice note or an audio file. */
export function isTranscription(text: string): boolean {
  return text.startsWith(VOICE_NOTE_MARK) || text.startsWith("[Transcription of the audio file ");
}

/** What a voice note gets when no speech-to-text service is configured. */
export const NO_SPEECH_SERVICE =
  "I cannot listen to voice notes yet: my owner can set speech_to_text (base_url, api_key, model) in picklebot.yaml; see docs/guides/chat-platforms.md.";

/** Options of {@link MediaIntake}. */
export interface MediaIntakeOptions {
  store: MediaStore;
  /** Downloads a file from the platform it was sent on. */
  download: (
    platform: ChatPlatformKind,
    attachment: ChatAttachment,
    signal: AbortSignal,
  ) => Promise<FileDownload>;
  /** The speech-to-text service (`speech_to_text`). (Default: none: voice notes are refused) */
  speech?: SpeechToTextConfig;
  /** Longest text a text file becomes (the tool-result budget). */
  maxTextChars: number;
  logger: Logger;
}

/**
 * Where a message's files were sent: a chat platform (downloaded as a step of the job), or
 * the dashboard's web chat (`web`: uploaded and stored before the job was queued).
 */
export type MediaOrigin = ChatPlatformKind | "web";

/** The job a message's files belong to. */
export interface IntakeJob {
  id: string;
  attachments: ChatAttachment[];
  /** Where the files were sent. */
  platform: MediaOrigin;
  /** No attempt comes after this one: a transient failure becomes a notice. */
  lastAttempt: boolean;
}

/** The files of a message as the model reads them, and what to tell the person. */
export interface ReadFiles {
  content: RequestContentBlock[];
  /** One line per file that could not be read, for the person. */
  notices: string[];
  /**
   * What the speech service charged for the transcriptions this job had made, when it is
   * priced and charged anything: the ledger row of the message. (Default: none)
   */
  charge?: SpeechCharge;
}

/** A priced service's charge for a message, as the ledger records it. */
export interface SpeechCharge {
  /** The service's model, as the ledger names it: `speech_to_text:<model>`. */
  model: string;
  usd: number;
}

/** What a file the platform gave no name is called. */
const UNNAMED: Record<ChatAttachment["kind"], string> = {
  image: "the image",
  voice: "the voice note",
  audio: "the audio file",
  document: "the file",
};

/** A file that cannot be read, with the reason for the person. */
class Unreadable extends Error {}

/** Reads the files of chat messages into their turns (see the file header). */
export class MediaIntake {
  readonly #options: MediaIntakeOptions;

  constructor(options: MediaIntakeOptions) {
    this.#options = options;
  }

  /** The blocks of every file of `job`, and the notices of those that could not be read. */
  async read(job: IntakeJob, signal: AbortSignal): Promise<ReadFiles> {
    const read: ReadFiles = { content: [], notices: [] };
    const paid = new Map<string, number>();
    for (const attachment of job.attachments) {
      const name = attachment.name ?? UNNAMED[attachment.kind];
      try {
        read.content.push(await this.#readOne(job, attachment, name, signal, paid));
      } catch (thrown) {
        const error = toError(thrown);
        if (!(error instanceof Unreadable)) throw error;
        this.#options.logger.warn(
          { job: job.id, file: name, kind: attachment.kind, reason: error.message },
          "could not read a file sent in a chat",
        );
        read.notices.push(`I could not read ${name}: ${error.message}`);
        read.content.push({
          type: "text",
          text: `[The user sent ${name}, which could not be read: ${error.message}]`,
        });
      }
    }
    // The downloads' chunks and the images' encodings are dead now: free them at once,
    // not when V8 next notices (many photos at once would otherwise pile up).
    if (job.attachments.length > 0) collectGarbage();
    const charge = this.#chargeFor(paid);
    return charge === undefined ? read : { ...read, charge };
  }

  /** What `paid` (seconds of audio by file) cost, when the service is priced. */
  #chargeFor(paid: Map<string, number>): SpeechCharge | undefined {
    const { speech } = this.#options;
    const seconds = [...paid.values()].reduce((sum, each) => sum + each, 0);
    const usd = ((speech?.price_per_minute ?? 0) * seconds) / 60;
    if (!speech || usd <= 0) return undefined;
    return { model: `speech_to_text:${speech.model}`, usd };
  }

  /**
   * Reads one file; `paid` gains the seconds of each audio file this job had transcribed,
   * by its SHA-256 (a file sent twice is paid once).
   */
  async #readOne(
    job: IntakeJob,
    attachment: ChatAttachment,
    name: string,
    signal: AbortSignal,
    paid: Map<string, number>,
  ): Promise<RequestContentBlock> {
    if ((attachment.size ?? 0) > MAX_FILE_BYTES) {
      throw new Unreadable(
        `it is ${megabytes(attachment.size ?? 0)}; I take files up to ${megabytes(MAX_FILE_BYTES)}`,
      );
    }
    const ref = await this.#stored(job, attachment, name, signal);
    const mimeType = attachment.mimeType ?? "application/octet-stream";
    if (attachment.kind === "voice" || attachment.kind === "audio") {
      return this.#transcript(job, attachment, { ref, mimeType }, signal, paid);
    }
    if (attachment.kind === "image" || mimeType.startsWith("image/")) return this.#image(ref);
    const bytes = await this.#options.store.read(ref.sha256);
    if (mimeType === "application/pdf" || /\.pdf$/i.test(name)) {
      const pdf = checkPdf(bytes);
      if (!pdf.ok) throw new Unreadable(pdf.reason);
      return { type: "document", mediaType: "application/pdf", media: ref, pages: pdf.pages };
    }
    const text = textOf(bytes, mimeType, name);
    const about = `${name} (${mimeType}, ${formatBytes(bytes.byteLength)})`;
    if (text === null) {
      return {
        type: "text",
        text: `[The user sent a file: ${about}. Its contents are not readable as text, an image or a PDF.]`,
      };
    }
    const { maxTextChars } = this.#options;
    const cut =
      text.length > maxTextChars
        ? `\n[cut to fit the context window: ${maxTextChars} of ${text.length} characters shown]`
        : "";
    return {
      type: "text",
      text: `[The user sent a file: ${about}]\n${text.slice(0, maxTextChars)}${cut}`,
    };
  }

  /**
   * The stored file: stored before for this source, or downloaded now, written to the
   * store chunk by chunk as it arrives.
   */
  async #stored(
    job: IntakeJob,
    attachment: ChatAttachment,
    name: string,
    signal: AbortSignal,
  ): Promise<MediaRef> {
    const { store } = this.#options;
    const known = await store.downloaded(attachment.source);
    if (known) return { ...(await store.stored(known)), name };
    if (job.platform === "web") throw new Unreadable("the upload is not stored; send it again");
    let stored: StoredMedia;
    try {
      const download = await this.#options.download(job.platform, attachment, signal);
      stored = await store.putChunks(
        download instanceof Uint8Array ? [download] : download,
        MAX_FILE_BYTES,
      );
    } catch (thrown) {
      signal.throwIfAborted();
      if (thrown instanceof MediaTooLarge) {
        throw new Unreadable(`it is over ${megabytes(MAX_FILE_BYTES)}, the largest file I take`);
      }
      const error = toError(thrown);
      const retryable = error instanceof PicklebotError && error.retryable;
      if (retryable && !job.lastAttempt) throw error;
      throw new Unreadable(`the download failed: ${error.message}`);
    }
    await store.rememberDownload(attachment.source, stored.sha256);
    return { ...stored, name };
  }

  async #image(original: MediaRef): Promise<RequestContentBlock> {
    const { store } = this.#options;
    try {
      const prepared = await prepareImage({
        path: store.path(original.sha256),
        bytes: original.bytes,
      });
      const stored = prepared.bytes
        ? { ...(await store.put(prepared.bytes)), name: original.name }
        : original;
      return {
        type: "image",
        mediaType: prepared.mediaType,
        media: stored,
        width: prepared.width,
        height: prepared.height,
      };
    } catch (error) {
      if (error instanceof UnreadableImage)
        throw new Unreadable("it is not an image I can open (it looks damaged)");
      throw error;
    }
  }

  /**
   * The transcript of a voice note or audio file: stored once made, never made twice.
   * `paid` gains its seconds when this job had it made (now, or in an attempt before).
   */
  async #transcript(
    job: IntakeJob,
    attachment: ChatAttachment,
    audio: { ref: MediaRef; mimeType: string },
    signal: AbortSignal,
    paid: Map<string, number>,
  ): Promise<RequestContentBlock> {
    const { store, speech } = this.#options;
    const what = attachment.kind === "voice" ? "a voice note" : `the audio file ${audio.ref.name}`;
    const mark =
      attachment.kind === "voice"
        ? VOICE_NOTE_MARK
        : `[Transcription of the audio file ${audio.ref.name}]`;
    let text = await store.transcript(audio.ref.sha256);
    if (text === null) {
      if (!speech) throw new Unreadable(NO_SPEECH_SERVICE);
      try {
        const made = await transcribe(
          speech,
          {
            bytes: await store.read(audio.ref.sha256),
            name: audio.ref.name,
            mimeType: audio.mimeType,
          },
          signal,
        );
        text = made.text;
        const seconds = made.seconds ?? attachment.durationS;
        const record = { jobId: job.id, ...(seconds === undefined ? {} : { seconds }) };
        await store.rememberTranscription(audio.ref.sha256, record);
      } catch (thrown) {
        signal.throwIfAborted();
        if (!(thrown instanceof TranscriptionError)) throw thrown;
        if (thrown.retryable && !job.lastAttempt) {
          throw new PicklebotError(`could not transcribe ${what}: ${thrown.message}`, {
            retryable: true,
          });
        }
        throw new Unreadable(`I could not transcribe it: ${thrown.message}`);
      }
      await store.rememberTranscript(audio.ref.sha256, text);
    }
    await this.#notePaid(job, audio.ref, paid);
    return { type: "text", text: `${mark}\n${text}` };
  }

  /** Adds the audio file's seconds to `paid` when this job had it transcribed. */
  async #notePaid(job: IntakeJob, audio: MediaRef, paid: Map<string, number>): Promise<void> {
    const { store, speech, logger } = this.#options;
    if (speech?.price_per_minute === undefined) return;
    const record = await store.transcription(audio.sha256);
    if (record?.jobId !== job.id) return;
    if (record.seconds === undefined) {
      logger.warn(
        { job: job.id, file: audio.name },
        "a transcription's cost is not counted: neither the service nor the platform said how long the audio is",
      );
      return;
    }
    paid.set(audio.sha256, record.seconds);
  }
}

const TEXT_TYPES =
  /^(text\/|application\/(json|xml|yaml|x-yaml|toml|javascript|typescript|x-sh|sql|csv))/;
const TEXT_NAMES =
  /\.(txt|md|markdown|csv|tsv|json|jsonl|ya?ml|toml|xml|html?|css|js|mjs|cjs|ts|tsx|jsx|py|rb|go|rs|java|kt|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh|sql|ini|cfg|conf|log|env\.example)$/i;

/** The text of a text-like file (by its type or name), or null: not text, or not UTF-8. */
function textOf(bytes: Uint8Array, mimeType: string, name: string): string | null {
  if (!TEXT_TYPES.test(mimeType) && !TEXT_NAMES.test(name)) return null;
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return text.includes("\u0000") ? null : text;
  } catch {
    return null;
  }
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
