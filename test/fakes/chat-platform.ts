/**
 * An in-memory {@link ChatPlatform} for in-process tests of the chat core (inbox, chat
 * frontend, outbox delivery, AgentWorker replies): no network, no library.
 *
 * It records every call, keeps what each chat shows (sent messages, as edited), can be told
 * to fail the next calls of a method with a {@link ChatPlatformError} (429 retry_after, a
 * 5xx, a Markdown refusal) or to refuse Markdown altogether, and lets the test push
 * incoming messages as if a person had written them.
 *
 *   const platform = new FakeChatPlatform({ maxMessageLength: 50 });
 *   platform.failNext("send", rateLimited(2));
 *   platform.push({ text: "hello" });           // reaches start()'s onMessage
 *   platform.texts("42");                       // what chat 42 shows now
 */
import { ChatPlatformError } from "../../src/base/errors.js";
import type {
  ChatPlatform,
  ChatPlatformKind,
  ChatPlatformState,
  IncomingChatMessage,
  SentChatMessage,
  TextFormat,
} from "../../src/ports/index.js";

/** The methods a test can watch and fail. */
export type PlatformMethod = "send" | "edit" | "typing";

/** One call the core made, and how it ended. */
export interface PlatformCall {
  method: PlatformMethod;
  chatId: string;
  /** The message edited (edit), or created (send, when it succeeded). */
  messageId?: string;
  text?: string;
  format?: TextFormat;
  /** The error thrown, or null when the call succeeded. */
  error: ChatPlatformError | null;
}

/** A message as a chat shows it. */
export interface ShownMessage {
  messageId: string;
  text: string;
  format: TextFormat;
}

/** Options of {@link FakeChatPlatform}. */
export interface FakeChatPlatformOptions {
  /** (Default: telegram) */
  kind?: ChatPlatformKind;
  /** (Default: 4096) */
  maxMessageLength?: number;
}

/** A 429 with `retry_after`: retryable, and the chat is held that long. */
export function rateLimited(retryAfterS: number): ChatPlatformError {
  return new ChatPlatformError(`429: Too Many Requests: retry after ${retryAfterS}`, {
    retryable: true,
    retryAfterS,
  });
}

/** A 5xx or network failure: retryable. */
export function serverError(): ChatPlatformError {
  return new ChatPlatformError("502: Bad Gateway", { retryable: true });
}

/** A 400 the platform gives for Markdown it cannot parse. */
export function formatRejected(): ChatPlatformError {
  return new ChatPlatformError("400: Bad Request: can't parse entities", { formatRejected: true });
}

/** A 400 for good (e.g. the chat is gone): not retryable. */
export function refused(): ChatPlatformError {
  return new ChatPlatformError("400: Bad Request: chat not found");
}

/** The in-memory chat platform. */
export class FakeChatPlatform implements ChatPlatform {
  readonly kind: ChatPlatformKind;
  readonly maxMessageLength: number;
  state: ChatPlatformState = "stopped";
  /** Every call, oldest first. */
  readonly calls: PlatformCall[] = [];
  /** When true, every Markdown send or edit fails with a format refusal. */
  rejectMarkdown = false;
  readonly #chats = new Map<string, ShownMessage[]>();
  readonly #failures: Record<PlatformMethod, ChatPlatformError[]> = {
    send: [],
    edit: [],
    typing: [],
  };
  #onMessage: ((message: IncomingChatMessage) => Promise<void>) | null = null;
  readonly #hung = new Map<string, Promise<void>>();
  #nextMessageId = 1;
  #nextUpdateId = 1;

  constructor(options: FakeChatPlatformOptions = {}) {
    this.kind = options.kind ?? "telegram";
    this.maxMessageLength = options.maxMessageLength ?? 4096;
  }

  async start(onMessage: (message: IncomingChatMessage) => Promise<void>): Promise<void> {
    this.#onMessage = onMessage;
    this.state = "connected";
  }

  async stop(): Promise<void> {
    this.#onMessage = null;
    this.state = "stopped";
  }

  async send(chatId: string, text: string, format: TextFormat): Promise<SentChatMessage> {
    await this.#hung.get(chatId);
    this.#failIfTold("send", { chatId, text, format });
    const messageId = String(this.#nextMessageId++);
    this.#chat(chatId).push({ messageId, text, format });
    this.calls.push({ method: "send", chatId, messageId, text, format, error: null });
    return { messageId };
  }

  async edit(chatId: string, messageId: string, text: string, format: TextFormat): Promise<void> {
    this.#failIfTold("edit", { chatId, messageId, text, format });
    const message = this.#chat(chatId).find((shown) => shown.messageId === messageId);
    if (!message) {
      const error = new ChatPlatformError("400: Bad Request: message to edit not found");
      this.calls.push({ method: "edit", chatId, messageId, text, format, error });
      throw error;
    }
    Object.assign(message, { text, format });
    this.calls.push({ method: "edit", chatId, messageId, text, format, error: null });
  }

  async typing(chatId: string): Promise<void> {
    this.#failIfTold("typing", { chatId });
    this.calls.push({ method: "typing", chatId, error: null });
  }

  /**
   * Makes every send to `chatId` hang, as over a connection that never answers, until the
   * returned function is called.
   */
  hangSendsTo(chatId: string): () => void {
    let release = () => {};
    this.#hung.set(chatId, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.#hung.delete(chatId);
      release();
    };
  }

  /** Makes the next calls of `method` fail, one error per call, in order. */
  failNext(method: PlatformMethod, ...errors: ChatPlatformError[]): void {
    this.#failures[method].push(...errors);
  }

  /** Delivers a message as if a person had sent it; returns it. Throws before `start`. */
  push(message: Partial<IncomingChatMessage> = {}): IncomingChatMessage {
    if (!this.#onMessage) throw new Error("the fake platform is not started");
    const full: IncomingChatMessage = {
      platform: this.kind,
      chatId: "42",
      userId: "7",
      userName: "Alice",
      text: "hello",
      direct: true,
      messageId: String(this.#nextUpdateId++),
      ...message,
    };
    this.#onMessage(full);
    return full;
  }

  /** The messages a chat shows now, oldest first. */
  shown(chatId: string): ShownMessage[] {
    return [...this.#chat(chatId)];
  }

  /** The texts a chat shows now, oldest first. */
  texts(chatId: string): string[] {
    return this.#chat(chatId).map((message) => message.text);
  }

  /** The successful calls of one method, oldest first. */
  succeeded(method: PlatformMethod): PlatformCall[] {
    return this.calls.filter((call) => call.method === method && call.error === null);
  }

  #chat(chatId: string): ShownMessage[] {
    let messages = this.#chats.get(chatId);
    if (!messages) {
      messages = [];
      this.#chats.set(chatId, messages);
    }
    return messages;
  }

  #failIfTold(method: PlatformMethod, call: Omit<PlatformCall, "method" | "error">): void {
    const markdownRefused =
      this.rejectMarkdown && method !== "typing" && call.format === "markdown";
    const error = this.#failures[method].shift() ?? (markdownRefused ? formatRejected() : null);
    if (!error) return;
    this.calls.push({ method, ...call, error });
    throw error;
  }
}
