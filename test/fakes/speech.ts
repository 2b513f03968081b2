/**
 * A fake OpenAI-compatible text-to-speech server on 127.0.0.1: `POST /v1/audio/speech`
 * with `{model, voice, input, response_format}` and `Authorization: Bearer <key>`,
 * answering like OpenAI's: the audio bytes (`audio/ogg` for `opus`), or a JSON error
 * `{error: {message, type, code}}`: 401 for another key, 400 for a missing field or an
 * input over 4,096 characters. `refuseAll` answers 503 as a service that is down.
 *
 *   const speech = await startFakeSpeech();
 *   // text_to_speech: {base_url: speech.baseUrl, api_key: speech.key}
 *   speech.requests; // what was asked
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the fake answered with audio. */
export interface SpeechRequest {
  model: string;
  voice: string;
  input: string;
  responseFormat: string;
}

/** The audio the fake answers for `input`: an OGG page header, then the text. */
export function fakeAudio(input: string): Buffer {
  return Buffer.concat([Buffer.from("OggS\0fake-opus\0"), Buffer.from(input)]);
}

const MAX_INPUT = 4096;
const CONTENT_TYPES: Record<string, string> = {
  opus: "audio/ogg",
  mp3: "audio/mpeg",
  wav: "audio/wav",
};

/** A running fake; `close()` when done. */
export interface FakeSpeech {
  /** What `text_to_speech.base_url` names: `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  /** The key it accepts. */
  key: string;
  /** Requests answered with audio, in order. */
  requests: SpeechRequest[];
  /** While true, every request gets 503, as a service that is down. */
  refuseAll: boolean;
  close(): Promise<void>;
}

/** Starts the fake on a free port. */
export async function startFakeSpeech(key = "sk-fake-speech-key"): Promise<FakeSpeech> {
  const requests: SpeechRequest[] = [];
  const state = { refuseAll: false };
  const server: Server = createServer(async (request, response): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const fail = (status: number, message: string, code: string | null): void =>
      void response
        .writeHead(status, { "content-type": "application/json" })
        .end(
          JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code } }),
        );
    if (state.refuseAll) return fail(503, "The server is overloaded or not ready yet.", null);
    if (request.method !== "POST" || request.url !== "/v1/audio/speech") {
      return fail(404, `Invalid URL (${request.method} ${request.url})`, null);
    }
    if (request.headers.authorization !== `Bearer ${key}`) {
      return fail(401, "Incorrect API key provided.", "invalid_api_key");
    }
    const body = JSON.parse(Buffer.concat(chunks).toString() || "{}") as Record<string, unknown>;
    for (const field of ["model", "voice", "input"]) {
      if (typeof body[field] !== "string" || body[field] === "") {
        return fail(400, `Missing required parameter: '${field}'.`, "missing_required_parameter");
      }
    }
    const input = body.input as string;
    if (input.length > MAX_INPUT) {
      return fail(
        400,
        `'input' is too long: at most ${MAX_INPUT} characters.`,
        "string_above_max_length",
      );
    }
    const responseFormat = typeof body.response_format === "string" ? body.response_format : "mp3";
    requests.push({
      model: body.model as string,
      voice: body.voice as string,
      input,
      responseFormat,
    });
    response
      .writeHead(200, {
        "content-type": CONTENT_TYPES[responseFormat] ?? "application/octet-stream",
      })
      .end(fakeAudio(input));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    key,
    requests,
    get refuseAll() {
      return state.refuseAll;
    },
    set refuseAll(value: boolean) {
      state.refuseAll = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
