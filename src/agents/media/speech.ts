/**
 * Speech to text through an OpenAI-compatible `POST {base_url}/audio/transcriptions`
 * (OpenAI, Groq, a self-hosted faster-whisper or whisper.cpp server): the audio file as
 * multipart form data, the text back as `{ "text": … }`, with the seconds of audio heard
 * when the service says (OpenAI's `usage: {type: "duration", seconds}`, or `duration` as
 * faster-whisper and whisper.cpp servers answer in `verbose_json`).
 */
import { toError } from "../../base/errors.js";
import type { SpeechToTextConfig } from "../../config/index.js";

/** Why a transcription failed, and whether trying again later can help. */
export class TranscriptionError extends Error {
  readonly retryable: boolean;

  constructor(message: string, retryable: boolean) {
    super(message);
    this.retryable = retryable;
  }
}

/** How long one transcription may take. */
const TRANSCRIBE_TIMEOUT_MS = 120_000;

/** A transcription: the text, and the seconds of audio when the service said. */
export interface Transcription {
  text: string;
  seconds?: number;
}

/** Transcribes one audio file. @throws TranscriptionError */
export async function transcribe(
  service: SpeechToTextConfig,
  audio: { bytes: Uint8Array; name: string; mimeType: string },
  signal?: AbortSignal,
): Promise<Transcription> {
  const form = new FormData();
  form.append("file", new Blob([audio.bytes], { type: audio.mimeType }), audio.name);
  form.append("model", service.model);
  form.append("response_format", "json");
  const timeout = AbortSignal.timeout(TRANSCRIBE_TIMEOUT_MS);
  let response: Response;
  try {
    response = await fetch(`${service.base_url.replace(/\/$/, "")}/audio/transcriptions`, {
      method: "POST",
      body: form,
      headers: service.api_key ? { authorization: `Bearer ${service.api_key}` } : {},
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (error) {
    signal?.throwIfAborted();
    throw new TranscriptionError(
      `the speech-to-text service at ${service.base_url} did not answer: ${toError(error).message}`,
      true,
    );
  }
  if (!response.ok) throw await refusal(service, response);
  const body = (await response.json().catch(() => null)) as TranscriptionBody | null;
  if (typeof body?.text !== "string") {
    throw new TranscriptionError("the speech-to-text service answered without a text", false);
  }
  const seconds = secondsHeard(body);
  return { text: body.text.trim(), ...(seconds === undefined ? {} : { seconds }) };
}

/** What an OpenAI-compatible transcription answers, of what picklebot reads. */
interface TranscriptionBody {
  text?: unknown;
  duration?: unknown;
  usage?: { type?: unknown; seconds?: unknown };
}

/** The seconds of audio the service says it heard, when it says. */
function secondsHeard(body: TranscriptionBody): number | undefined {
  const said = body.usage?.type === "duration" ? body.usage.seconds : body.duration;
  return typeof said === "number" && Number.isFinite(said) && said >= 0 ? said : undefined;
}

async function refusal(
  service: SpeechToTextConfig,
  response: Response,
): Promise<TranscriptionError> {
  const said = (await response.text().catch(() => "")).slice(0, 300);
  const { status } = response;
  if (status === 401 || status === 403) {
    return new TranscriptionError(
      `the speech-to-text service refused its key (${status}); check speech_to_text.api_key in picklebot.yaml`,
      false,
    );
  }
  const retryable = status === 408 || status === 429 || status >= 500;
  const what = retryable ? "failed" : "could not read the audio";
  return new TranscriptionError(
    `the speech-to-text service at ${service.base_url} ${what} (${status}): ${said}`,
    retryable,
  );
}
