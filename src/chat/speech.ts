/**
 * Spoken replies: the final text of a reply of an agent with `voice_replies: always` (or
 * `in_kind`, when the message it answers came as a voice note or an audio file) is
 * also sent as a voice message, spoken by the owner's OpenAI-compatible text-to-speech
 * endpoint (`text_to_speech` in picklebot.yaml: `POST <base_url>/audio/speech`, asking for
 * OGG/Opus, what Telegram's `sendVoice` takes). The voice goes through the outbox as a
 * file entry (`voice:<job id>`) after the text, so it is sent once; a synthesis that fails
 * (the service down, the key refused) is logged and leaves the text reply as it is.
 */
import { redactSecrets } from "../base/redact.js";
import type { Config } from "../config/index.js";
import type { SpokenReplyMode } from "../ports/index.js";

/** `text_to_speech` of picklebot.yaml. */
export type TextToSpeechConfig = NonNullable<Config["text_to_speech"]>;

/** Longest text the OpenAI speech endpoint takes in one request (its `input` limit). */
export const MAX_SPOKEN_CHARACTERS = 4096;

/**
 * The text as it should be read aloud: Markdown marks left out (emphasis, code ticks,
 * heading and quote marks), a link as its text, a code block as its lines.
 */
export function spokenText(markdown: string): string {
  return markdown
    .replace(/```[^\n]*\n?/g, "")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/^\s{0,3}(#{1,6}|>)\s*/gm, "")
    .replace(/(\*\*|__|\*|`|~~)/g, "")
    .trim();
}

/** A failed synthesis, with a message that says why and never shows the key. */
export class SpeechError extends Error {}

/** Speaks texts with one configured endpoint. */
export class TextToSpeech {
  readonly #config: TextToSpeechConfig;

  constructor(config: TextToSpeechConfig) {
    this.#config = config;
  }

  /**
   * The text spoken, as OGG/Opus bytes; a text longer than the endpoint takes is cut at
   * {@link MAX_SPOKEN_CHARACTERS}.
   *
   * @throws SpeechError naming the endpoint and its answer (a refused key says to check
   *   `text_to_speech.api_key`).
   */
  async speak(text: string): Promise<Buffer> {
    const { base_url, api_key, model, voice, timeout_s } = this.#config;
    const url = `${base_url.replace(/\/+$/, "")}/audio/speech`;
    const body = {
      model,
      voice,
      input: text.slice(0, MAX_SPOKEN_CHARACTERS),
      response_format: "opus",
    };
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${api_key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeout_s * 1000),
      });
    } catch (thrown) {
      const reason =
        thrown instanceof Error
          ? ((thrown.cause as Error | undefined)?.message ?? thrown.message)
          : String(thrown);
      throw new SpeechError(`text_to_speech: ${url} could not be reached: ${reason}`);
    }
    if (!response.ok) {
      const answer = redactSecrets((await response.text()).slice(0, 300), [api_key]);
      const fix =
        response.status === 401 || response.status === 403
          ? "; the service refused the key: check text_to_speech.api_key"
          : "";
      throw new SpeechError(`text_to_speech: ${url} answered ${response.status}: ${answer}${fix}`);
    }
    return Buffer.from(await response.arrayBuffer());
  }
}

/** What a chat frontend needs to speak replies. */
export interface SpokenReplies {
  /** When the replies of this agent are spoken too (its `voice_replies`; none: never). */
  modeOf(agentId: string): SpokenReplyMode | undefined;
  tts: TextToSpeech;
}

/** Whether a reply is spoken, by its agent's mode and how the message it answers came. */
export function isSpoken(mode: SpokenReplyMode | undefined, cameAsVoice: boolean): boolean {
  return mode === "always" || (mode === "in_kind" && cameAsVoice);
}
