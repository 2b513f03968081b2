/**
 * An in-memory {@link ChatPlatform} for in-process tests of the chat core (inbox, chat
 * frontend, outbox delivery, AgentWorker replies): no network, no library.
 *
 * It records every call, keeps what each chat shows (sent messages, as edited), can be told
 * to fail the next calls of a method with a {@link ChatPlatformError} (429 retry_after, a
 * 5xx, a Markdown refusal) or to refuse Markdown altogether, and lets the test push
 * incoming messages and button presses as if a person had written or pressed them.
 *
 *   const platform = new FakeChatPlatform({ maxMessageLength: 50 });
 *   platform.failNext("send", rateLimited(2));
 *   platform.push({ text: "hello" });           // reaches start()'s onMessage
 *   platform.texts("42");                       // what chat 42 shows now
 *   await platform.pressButton({ messageId: "1", choiceId: "allow" }); // reaches onChoice
 */
import { createHash } from "node:crypto";
import { ChatPlatformError } from "../../src/base/errors.js";
import { checkChoices } from "../../src/chat/choices.js";
import { checkOutgoingFile } from "../../src/chat/files.js";
import type {
  ChatAttachment,
  ChatPlatform,
  ChatPlatformKind,
  ChatPlatformState,
  Choice,
  IncomingChatMessage,
  IncomingChoice,
  OutgoingFile,
  OutgoingFileKind,
  SentChatMessage,
  TextFormat,
} from "../../src/ports/index.js";

/** The methods a test can watch and fail. */
export type PlatformMethod =
  | "send"
  | "sendChoices"
  | "acknowledgeChoice"
  | "edit"
  | "typing"
  | "sendFile";

/** A file a chat shows: what was sent, without its bytes. */
export interface ShownFile {
  kind: OutgoingFileKind;
  name: string;
  mediaType: string;
  size: number;
  /** SHA-256 of the content, hex. */
  sha256: string;
}

/** A press to simulate, see {@link FakeChatPlatform.pressButton}; the rest has defaults. */
export type ButtonPress = Pick<IncomingChoice, "messageId" | "choiceId"> &
  Partial<Omit<IncomingChoice, "platform" | "pressId">>;

/** One call the core made, and how it ended. */
export interface PlatformCall {
  method: PlatformMethod;
  chatId: string;
  /** The message edited (edit), created (send, sendChoices, when it succeeded) or pressed. */
  messageId?: string;
  /** The text sent, or the notice of an acknowledgement. */
  text?: string;
  format?: TextFormat;
  /** The buttons sent (sendChoices). */
  choices?: readonly Choice[];
  /** The press answered (acknowledgeChoice). */
  pressId?: string;
  /** The file sent (sendFile); `text` is its caption. */
  file?: ShownFile;
  /** The error thrown, or null when the call succeeded. */
  error: ChatPlatformError | null;
}

/** A message as a chat shows it. */
export interface ShownMessage {
  messageId: string;
  text: string;
  format: TextFormat;
  /** Its buttons; absent when it has none (never had, or an edit removed them). */
  choices?: readonly Choice[];
  /** The file it carries (sendFile; `text` is the caption). */
  file?: ShownFile;
}

/** Options of {@link FakeChatPlatform}. */
export interface FakeChatPlatformOptions {
  /** (Default: telegram) */
  kind?: ChatPlatformKind;
  /** (Default: 4096) */
  maxMessageLength?: number;
  /** The platform's own shortest time between two edits of a chat. (Default: none) */
  editIntervalMs?: number;
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

/** What the platform says to a press answered twice, late, or never made: not retryable. */
export function pressExpired(): ChatPlatformError {
  return new ChatPlatformError(
    "400: Bad Request: query is too old and response timeout expired or query ID is invalid",
  );
}

/** A 400 for good (e.g. the chat is gone): not retryable. */
export function refused(): ChatPlatformError {
  return new ChatPlatformError("400: Bad Request: chat not found");
}

/** The in-memory chat platform. */
export class FakeChatPlatform implements ChatPlatform {
  readonly kind: ChatPlatformKind;
  readonly maxMessageLength: number;
  readonly editIntervalMs: number | undefined;
  state: ChatPlatformState = "stopped";
  /** Never refused: it has no login. */
  readonly refusal = null;
  /** Every call, oldest first. */
  readonly calls: PlatformCall[] = [];
  /** When true, every Markdown send or edit fails with a format refusal. */
  rejectMarkdown = false;
  readonly #chats = new Map<string, ShownMessage[]>();
  readonly #failures: Record<PlatformMethod, ChatPlatformError[]> = {
    send: [],
    sendChoices: [],
    acknowledgeChoice: [],
    edit: [],
    typing: [],
    sendFile: [],
  };
  #onMessage: ((message: IncomingChatMessage) => Promise<void>) | null = null;
  #onChoice: ((press: IncomingChoice) => Promise<void>) | null = null;
  /** Presses made and not answered yet. */
  readonly #unanswered = new Set<string>();
  #nextPressId = 1;
  readonly #hung = new Map<string, Promise<void>>();
  #nextMessageId = 1;
  #nextUpdateId = 1;

  constructor(options: FakeChatPlatformOptions = {}) {
    this.kind = options.kind ?? "telegram";
    this.maxMessageLength = options.maxMessageLength ?? 4096;
    this.editIntervalMs = options.editIntervalMs;
  }

  async start(
    onMessage: (message: IncomingChatMessage) => Promise<void>,
    onChoice?: (press: IncomingChoice) => Promise<void>,
  ): Promise<void> {
    this.#onMessage = onMessage;
    this.#onChoice = onChoice ?? null;
    this.state = "connected";
  }

  async stop(): Promise<void> {
    this.#onMessage = null;
    this.#onChoice = null;
    this.state = "stopped";
  }

  async send(chatId: string, text: string, format: TextFormat): Promise<SentChatMessage> {
    return await this.#show("send", { chatId, text, format });
  }

  /** Refuses choices as the real adapters do (the shared check), before any failure. */
  async sendChoices(
    chatId: string,
    text: string,
    format: TextFormat,
    choices: readonly Choice[],
  ): Promise<SentChatMessage> {
    checkChoices(this.kind, choices);
    return await this.#show("sendChoices", { chatId, text, format, choices: [...choices] });
  }

  /** A press can be answered once: again, or one never made, fails as Telegram's does. */
  async acknowledgeChoice(press: IncomingChoice, notice?: string): Promise<void> {
    const call = {
      chatId: press.chatId,
      messageId: press.messageId,
      pressId: press.pressId,
      ...(notice === undefined ? {} : { text: notice }),
    };
    this.#failIfTold("acknowledgeChoice", call);
    if (!this.#unanswered.delete(press.pressId)) {
      const error = pressExpired();
      this.calls.push({ method: "acknowledgeChoice", ...call, error });
      throw error;
    }
    this.calls.push({ method: "acknowledgeChoice", ...call, error: null });
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
    delete message.choices;
    this.calls.push({ method: "edit", chatId, messageId, text, format, error: null });
  }

  /** Files people sent, by their source, as {@link download} hands them over. */
  readonly files = new Map<string, Uint8Array>();

  async download(attachment: ChatAttachment): Promise<Uint8Array> {
    const bytes = this.files.get(attachment.source);
    if (!bytes) throw new ChatPlatformError(`no file ${attachment.source}`, { retryable: false });
    return bytes;
  }

  async typing(chatId: string): Promise<void> {
    this.#failIfTold("typing", { chatId });
    this.calls.push({ method: "typing", chatId, error: null });
  }

  /** Refuses files as the real adapters do (the shared check), before any failure. */
  async sendFile(chatId: string, file: OutgoingFile): Promise<SentChatMessage> {
    checkOutgoingFile(this.kind, file);
    const shown: ShownFile = {
      kind: file.kind,
      name: file.name,
      mediaType: file.mediaType,
      size: file.content.length,
      sha256: createHash("sha256").update(file.content).digest("hex"),
    };
    const message = { chatId, text: file.caption ?? "", format: "plain" as const, file: shown };
    await this.#hung.get(chatId);
    this.#failIfTold("sendFile", message);
    const messageId = String(this.#nextMessageId++);
    this.#chat(chatId).push({ messageId, text: message.text, format: "plain", file: shown });
    this.calls.push({ method: "sendFile", ...message, messageId, error: null });
    return { messageId };
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

  /**
   * Presses a button of a message the bot sent (chat "42" unless given), as a person
   * would; resolves with the press once `onChoice` has. Throws before `start`, or when the
   * message shows no such button.
   */
  async pressButton(press: ButtonPress): Promise<IncomingChoice> {
    if (!this.#onChoice) throw new Error("the fake platform is not started with onChoice");
    const chatId = press.chatId ?? "42";
    const shown = this.#chat(chatId).find((message) => message.messageId === press.messageId);
    if (!shown?.choices?.some((choice) => choice.id === press.choiceId)) {
      throw new Error(
        `message ${press.messageId} in chat ${chatId} has no button "${press.choiceId}"`,
      );
    }
    const full: IncomingChoice = {
      platform: this.kind,
      chatId,
      userId: "7",
      userName: "Alice",
      direct: true,
      ...press,
      pressId: `press-${this.#nextPressId++}`,
    };
    this.#unanswered.add(full.pressId);
    await this.#onChoice(full);
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

  async #show(
    method: "send" | "sendChoices",
    message: { chatId: string; text: string; format: TextFormat; choices?: readonly Choice[] },
  ): Promise<SentChatMessage> {
    const { chatId, text, format, choices } = message;
    await this.#hung.get(chatId);
    this.#failIfTold(method, message);
    const messageId = String(this.#nextMessageId++);
    this.#chat(chatId).push({ messageId, text, format, ...(choices ? { choices } : {}) });
    this.calls.push({ method, ...message, messageId, error: null });
    return { messageId };
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
