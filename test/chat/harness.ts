/**
 * What the {@link ChatPlatform} contract suite needs of a platform under test: a harness,
 * one per adapter (`telegram.harness.ts`, `discord.harness.ts`), that runs the platform's
 * fake server, builds adapters pointed at it, and lets the suite act as the people on the
 * other side (write, press a button) and read what the platform received (messages as the
 * chats show them, typing, answers to presses).
 *
 * Glossary
 * - **Person**: a platform user who writes to the bot; the suite has two, alice and bob.
 * - **Direct chat**: the private chat / DM between a person and the bot; it exists at
 *   the fake from the start (Telegram: the person pressed Start; Discord: a DM channel).
 * - **Group**: a chat with several people where the bot reads only what mentions it
 *   (a Telegram supergroup, a Discord guild channel).
 * - **Action**: a call of the adapter a fault can be injected into: send, edit, typing.
 */
import type { Logger } from "../../src/base/log.js";
import type { ChatPlatform, ChatPlatformKind } from "../../src/ports/index.js";

/** A person on the platform, and the display name the adapter should report for them. */
export interface Person {
  id: string;
  /** What {@link IncomingChatMessage.userName} says for this person. */
  userName: string;
}

/** Options of one adapter a harness builds. */
export interface HarnessPlatformOptions {
  /** The bot token. (Default: the one the fake accepts) */
  token?: string;
  /** (Default: silent) */
  logger?: Logger;
  /** How long a call may go unanswered before it is abandoned. (Default: the adapter's) */
  callTimeoutMs?: number;
}

/** A person's text message, as the suite sends it. */
export interface PersonMessage {
  from: Person;
  /** Their direct chat with the bot, or the group. */
  in: "direct" | "group";
  text: string;
  /** Mention the bot at the start of the text, as the platform's apps do. (Default: false) */
  mention?: boolean;
}

/** A press of a button on a message the bot sent. */
export interface PersonPress {
  from: Person;
  chatId: string;
  messageId: string;
  choiceId: string;
}

/** A message the bot sent, as a chat shows it now. */
export interface ShownMessage {
  messageId: string;
  text: string;
  /** Its buttons, row by row: [] when it has none. */
  buttons: { id: string; label: string }[][];
}

/** A file the bot sent, as the chat shows it. */
export interface ShownFile {
  messageId: string;
  name: string;
  size: number;
  /** SHA-256 of the bytes the platform received, hex. */
  sha256: string;
  /** The text shown with it ("" for none). */
  caption: string;
}

/** An answer to a press the platform accepted. */
export interface PressAnswer {
  pressId: string;
  /** The notice shown to the person alone; absent for a silent answer. */
  notice?: string;
}

/** The adapter calls a fault can be injected into. */
export type HarnessAction = "send" | "edit" | "typing";

/** A refusal the fake answers instead of running an action. */
export type InjectedFailure = { status: 429; retryAfterS: number } | { status: 502 };

/** A started fake and what the suite does with it; see the file header. */
export interface ChatPlatformHarness {
  readonly kind: ChatPlatformKind;
  /** The token the fake accepts: no error or log line may show it. */
  readonly token: string;
  /** A well-formed token the fake refuses with 401, as the real service would. */
  readonly wrongToken: string;
  readonly alice: Person;
  readonly bob: Person;
  /** A group the bot and both people are in. */
  readonly groupChat: string;
  /** A new adapter pointed at the fake, not started, retrying a lost connection quickly. */
  platform(options?: HarnessPlatformOptions): ChatPlatform;
  /** The chat id of `person`'s direct chat with the bot. */
  directChat(person: Person): string;

  // Acting as the people on the other side.
  /** A person writes; resolves once the fake has it on its way to the bot. */
  write(message: PersonMessage): Promise<void>;
  /**
   * A message by the bot itself (`self`) or by another bot, mentioning the bot, in the
   * group: what the platform would hand a bot, if anything.
   */
  writeAsBot(input: { self: boolean; text: string }): Promise<void>;
  /** A person presses a button; resolves with the press's id once it is on its way. */
  press(press: PersonPress): Promise<string>;
  /** Moves the fake's clock past the time a press may still be answered in. */
  expirePresses(): void;

  // What the platform received.
  /** The bot's messages in a chat, oldest first, as the chat shows them now. */
  shown(chatId: string): ShownMessage[];
  /** Typing indicators the chat was shown. */
  typings(chatId: string): number;
  /** Answers to presses the platform accepted, in order. */
  answers(): PressAnswer[];
  /** Requests that would create a message, refused ones included. */
  sendAttempts(): number;
  /** The files the bot sent to a chat, oldest first. */
  files(chatId: string): ShownFile[];
  /** Requests that would send a file, refused ones included. */
  fileAttempts(): number;
  /** Connections an adapter holds open to receive (held polls, gateway sockets). */
  connections(): number;
  /** Attempts to log in (the first call of a start) the fake has seen. */
  logins(): number;

  // Faults.
  /** Makes the next call of `action` fail with `failure`. */
  failNext(action: HarnessAction, failure: InjectedFailure): void;
  /** Leaves the next call of `action` unanswered, as over a half-open connection. */
  hangNext(action: HarnessAction): void;
  /**
   * Cuts the network between the adapters and the fake, as a lost connection would: the
   * connections they receive on drop, and new ones and requests fail until {@link goOnline}.
   */
  goOffline(): void;
  /** Lets connections and requests through again. */
  goOnline(): void;
  /** Stops the fake: nothing answers on its port any more. Idempotent. */
  close(): Promise<void>;
}

/** Starts a fake and returns its harness. */
export type ChatPlatformHarnessFactory = () => Promise<ChatPlatformHarness>;
