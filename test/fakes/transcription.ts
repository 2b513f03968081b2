/**
 * A fake OpenAI-compatible speech-to-text server: `POST /v1/audio/transcriptions` with a
 * multipart form (file, model), answering `{ "text": … }` (and, when told the audio's length,
 * `usage: {type: "duration", seconds}` as OpenAI's whisper-1 does). It refuses what OpenAI refuses:
 * a missing or wrong key (401), a file it cannot decode (400 "Invalid file format"), and
 * it can be taken down (connections cut), made unavailable (503, as OpenAI answers when
 * it is overloaded) to play a service that is down, or made to hang.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Options of {@link startFakeTranscription}. */
export interface FakeTranscriptionOptions {
  /** The key it accepts. (Default: "stt-test-key") */
  apiKey?: string;
  /** What it hears in any audio. (Default: "pick up some pickles") */
  transcript?: string;
  /** Seconds it says any audio lasts, in `usage`. (Default: it does not say) */
  seconds?: number;
}

/** One transcription request it received. */
export interface TranscriptionCall {
  model: string;
  fileName: string;
  status: number;
}

/** Formats OpenAI decodes, by the file's first bytes. */
const DECODABLE: Array<[string, Buffer]> = [
  ["ogg", Buffer.from("OggS")],
  ["mp3", Buffer.from("ID3")],
  ["wav", Buffer.from("RIFF")],
  ["flac", Buffer.from("fLaC")],
];

export class FakeTranscription {
  readonly calls: TranscriptionCall[] = [];
  /** Connections are cut while true. */
  down = false;
  /** Every request is answered 503 while true. */
  unavailable = false;
  /** Requests are held without an answer while true (counted in {@link held}). */
  hang = false;
  /** Requests held by {@link hang}. */
  held = 0;
  readonly #server: Server;
  readonly #key: string;
  readonly #transcript: string;
  readonly #seconds: number | undefined;

  constructor(options: FakeTranscriptionOptions = {}) {
    this.#key = options.apiKey ?? "stt-test-key";
    this.#transcript = options.transcript ?? "pick up some pickles";
    this.#seconds = options.seconds;
    this.#server = createServer((request, response) => {
      if (this.down) return void request.socket.destroy();
      if (this.hang) {
        this.held += 1;
        return;
      }
      void this.#answer(request).then(([status, body]) => {
        response
          .writeHead(status, { "content-type": "application/json" })
          .end(JSON.stringify(body));
      });
    });
  }

  /** The `base_url` to configure: `/v1` included. */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`;
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  async #answer(request: IncomingMessage): Promise<[number, unknown]> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const text = body.toString("latin1");
    const model = /name="model"\r\n\r\n([^\r]*)/.exec(text)?.[1] ?? "";
    const fileName = /name="file"; filename="([^"]*)"/.exec(text)?.[1] ?? "";
    const record = (status: number, answer: unknown): [number, unknown] => {
      this.calls.push({ model, fileName, status });
      return [status, answer];
    };
    if (this.unavailable) {
      return record(503, {
        error: {
          message: "The engine is currently overloaded, please try again later",
          type: "server_error",
        },
      });
    }
    if (request.url !== "/v1/audio/transcriptions" || request.method !== "POST") {
      return record(404, { error: { message: "Not found" } });
    }
    if (request.headers.authorization !== `Bearer ${this.#key}`) {
      return record(401, {
        error: { message: "Incorrect API key provided", type: "invalid_request_error" },
      });
    }
    const start = text.indexOf("\r\n\r\n", text.indexOf('name="file"')) + 4;
    const audio = body.subarray(start, start + 4);
    if (!DECODABLE.some(([, magic]) => audio.subarray(0, magic.length).equals(magic))) {
      return record(400, {
        error: {
          message:
            "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']",
          type: "invalid_request_error",
        },
      });
    }
    const usage =
      this.#seconds === undefined ? {} : { usage: { type: "duration", seconds: this.#seconds } };
    return record(200, { text: this.#transcript, ...usage });
  }
}

/** Starts a {@link FakeTranscription} on 127.0.0.1. */
export async function startFakeTranscription(
  options: FakeTranscriptionOptions = {},
): Promise<FakeTranscription> {
  const fake = new FakeTranscription(options);
  await fake.listen();
  return fake;
}
