/**
 * What happens to a message a chat platform received, for every platform alike:
 *
 *   sender allowed (allowed_user_ids or paired)? ── no ─► logged; at most once an hour a
 *      │                                              refusal with their id and a code
 *      yes ─► known secrets in its text replaced by [redacted] (before anything is stored)
 *      ├─ a part it cannot read (a sticker, a location) ─► one "I can read …" answer, logged
 *      ├─ /new, /status, /usage, /stop, /agent, /start, /help, or no text and no file ─► answered here, no job
 *      │  (the commands are commands.ts's, on this chat as their ChatContext)
 *      └─ anything else (and /compact) ─► one chat job for the chat's agent (chat-agents.ts),
 *                          session key `<platform>:<chat id>`, dedupe key
 *                          `<platform>:<message id>` (a redelivered update adds nothing),
 *                          sender `<platform>:<user id>` (whose memory it reads and writes)
 */

import { isTranscription } from "../agents/media/intake.js";
import type { PriceTable } from "../agents/prices.js";
import { stopSessionReply } from "../agents/session-stop.js";
import { chatReplyTarget } from "../base/chat-address.js";
import { StorageUnavailableError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { chatPersonKey } from "../base/person-key.js";
import { chatSessionKey } from "../base/session-key.js";
import {
  type ChatCommandName,
  type ChatHeartbeats,
  type ChatPlatformKind,
  type ChatReplyTarget,
  type Clock,
  type HistoryStore,
  type IncomingChatMessage,
  type JobAdmin,
  type JobQueue,
  type JobSender,
  type JobTask,
  type MemoryStore,
  PAIRING_CODE_TTL_MS,
  type PairingStore,
  type RecallStore,
  type Session,
  type UsageLedger,
} from "../ports/index.js";
import { type ChatAgent, type ChatAgentDirectory, ChatAgents } from "./agents.js";
import {
  ChatCommandSet,
  type ChatCommandSpec,
  type ChatContext,
  type ChatModels,
  type ConversationQueue,
  commonCommands,
  describeChatCommand,
  parseChatCommand,
} from "./commands.js";

/** `/reminders` in a chat with none. */
export const NO_REMINDERS = "This chat has no active schedules.";

/** The answer to a stranger in a group: no code, no id, where to ask instead. */
export const GROUP_REFUSAL =
  "Sorry, I only answer people my owner allowed. To ask for access, write to me in a private chat.";

/** What every "cannot read" answer starts with: the kinds of message picklebot reads. */
export const CAN_READ = "I can read text, photos and images, PDFs, text files and voice notes.";

/** Options of {@link ChatInbox}. */
export interface ChatInboxOptions {
  /** User ids admitted by picklebot.yaml, per platform. */
  allowedUserIds: (platform: ChatPlatformKind) => Set<string>;
  /** The agents chats may talk to, `default_agent` and `bindings`. */
  agents: ChatAgentDirectory;
  queue: JobQueue & JobAdmin;
  history: HistoryStore;
  pairing: PairingStore;
  /** Sends a short answer into the message's chat, through the outbox. */
  answer: (message: IncomingChatMessage, text: string) => Promise<void>;
  /** Aborts the running job of a session key, wherever it runs; false when none runs. */
  stopSession: (sessionKey: string) => Promise<boolean>;
  /** A session's size (estimated tokens of its next request) against its agent's window. */
  contextUsage: (agentId: string, sessionId: string) => Promise<{ tokens: number; window: number }>;
  /** Model calls, for `/usage`. */
  usage: UsageLedger;
  /** The named models, for `/model` and `/status`. */
  models: ChatModels;
  /** Pricing of `/usage`: `llm.prices`, and the zone whose calendar day is "today". */
  pricing: { prices: PriceTable; timezone: string };
  clock: Clock;
  logger: Logger;
  /** The memories `/memory` shows and `/forget` clears. */
  memory: MemoryStore;
  /** Sessions' memory snapshots (`/forget`). */
  recall: RecallStore;
  /**
   * The chat's active reminders and recurring tasks, as `/reminders` lists them.
   * (Default: none)
   */
  reminders?: (chat: ChatReplyTarget) => Promise<string>;
  /** The chat's heartbeat, for `/heartbeat` (its owner's). (Default: none: refused) */
  heartbeats?: ChatHeartbeats;
  /**
   * Takes known secrets out of a message's text before it is stored or queued
   * (`secretValues(config)`). (Default: the text as it is)
   */
  redact?: (text: string) => string;
}

/** Turns accepted messages into jobs and answers chat commands. */
export class ChatInbox {
  readonly #options: ChatInboxOptions;
  readonly #commands: ChatCommandSet<InboxChat>;
  readonly #agents: ChatAgents;

  constructor(options: ChatInboxOptions) {
    this.#options = options;
    this.#agents = new ChatAgents(options.agents, options.history);
    const common = commonCommands(options);
    const own = (
      name: "compact" | "stop" | "reminders" | "heartbeat" | "transcript",
      run: (chat: InboxChat) => Promise<void>,
    ): ChatCommandSpec<InboxChat> => ({ description: describeChatCommand(name), run });
    const commands = {
      new: common.new,
      status: common.status,
      usage: common.usage,
      // The job it queues answers in the chat.
      compact: own("compact", (chat) => this.#enqueue(chat.message, "compact")),
      stop: own("stop", (chat) => this.#stop(chat)),
      agent: common.agent,
      model: common.model,
      reminders: own("reminders", (chat) => this.#reminders(chat)),
      heartbeat: {
        description: describeChatCommand("heartbeat"),
        run: (chat, argument) => this.#heartbeat(chat, argument),
      },
      transcript: own("transcript", (chat) => this.#transcript(chat)),
      memory: common.memory,
      forget: common.forget,
    } satisfies Record<Exclude<ChatCommandName, "help" | "start">, ChatCommandSpec<InboxChat>>;
    this.#commands = new ChatCommandSet(commands, {
      intro: "Send me a message and I will answer. Commands:",
      aliases: { start: "help" },
    });
  }

  /** `/reminders`: the chat's active schedules (the `schedule` tool makes them). */
  async #reminders(chat: InboxChat): Promise<void> {
    const { reminders } = this.#options;
    const target = chatReplyTarget(chat.message);
    await chat.reply(reminders ? await reminders(target) : NO_REMINDERS);
  }

  /** `/heartbeat [every 30m <what to check> | off]`: the chat's heartbeat, for its owner only. */
  async #heartbeat(chat: InboxChat, argument: string): Promise<void> {
    const { heartbeats } = this.#options;
    if (!chat.owner()) {
      return chat.reply("Only the owner can see or set this chat's heartbeat.");
    }
    if (!heartbeats) return chat.reply("Heartbeats are not available here.");
    const { agentId } = await chat.agent();
    const target = chatReplyTarget(chat.message);
    const userId = chat.message.userId;
    await chat.reply(await heartbeats.command(target, argument, { agentId, userId }));
  }

  /**
   * `/stop`: aborts the chat's running job, or stops its job that waits (for a subagent,
   * an approval, a time); the subagents of either are stopped with it.
   */
  async #stop(chat: InboxChat): Promise<void> {
    const { queue, stopSession } = this.#options;
    const stopper = { stop: stopSession };
    const outcome = await stopSessionReply(chat.key, { stopper, queue });
    const answers = {
      running: "Stopping the reply in progress.",
      waiting: "Stopping the reply that was waiting.",
      nothing: "Nothing is running in this chat.",
    } as const;
    await chat.reply(answers[outcome]);
  }

  /**
   * Handles one message: resolves once its job or its answer is stored. Throws only when
   * the storage is unavailable (locked, full, unreachable): the platform then does not
   * confirm the message and hands it over again. Other failures are logged and told to
   * the sender.
   */
  async handle(received: IncomingChatMessage): Promise<void> {
    const { logger, redact } = this.#options;
    const message = redact ? { ...received, text: redact(received.text) } : received;
    try {
      if (!(await this.#isAllowed(message))) return await this.#refuse(message);
      const typed = parseChatCommand(message.text);
      const command = typed && this.#commands.find(typed.name);
      if (typed && command) {
        return await command.run(
          new InboxChat(message, this.#agents, this.#options),
          typed.argument,
        );
      }
      if (message.unreadable) await this.#cannotRead(message, message.unreadable);
      const files = message.attachments ?? [];
      // A bare mention ("@bot") leaves no text: the model would refuse an empty message.
      if (message.text.trim() === "" && files.length === 0) {
        if (message.unreadable) return;
        return await this.#options.answer(message, this.#commands.help);
      }
      await this.#enqueue(message);
    } catch (thrown) {
      const error = toError(thrown);
      const where = { platform: message.platform, chat: message.chatId, error: error.message };
      if (error instanceof StorageUnavailableError) {
        logger.warn(
          where,
          "could not store a chat message; it is not confirmed and will come again",
        );
        throw error;
      }
      logger.error(where, "could not take a chat message");
      await this.#options
        .answer(message, "Sorry, I could not take that message; please send it again.")
        .catch(() => undefined);
    }
  }

  /** One short reply saying what picklebot can read, and a log line. */
  async #cannotRead(message: IncomingChatMessage, unreadable: string[]): Promise<void> {
    const { platform, chatId, userId } = message;
    const what = unreadable.join(", ");
    this.#options.logger.info(
      { platform, chat: chatId, user: userId, what },
      "message part picklebot cannot read",
    );
    const rest =
      message.text.trim() === "" && !message.attachments ? "" : " I read the rest of your message.";
    await this.#options.answer(message, `${CAN_READ} I cannot read ${what}.${rest}`);
  }

  /** `/transcript`: the transcript of the last voice note or audio file of the chat's conversation. */
  async #transcript(chat: InboxChat): Promise<void> {
    const session = await chat.session();
    const messages = session ? await this.#options.history.messages(session.id) : [];
    const heard = messages
      .filter((message) => message.role === "user")
      .flatMap((message) => message.content)
      .findLast((block) => block.type === "text" && isTranscription(block.text));
    await chat.reply(
      heard?.type === "text" ? heard.text : "There is no voice note in this conversation yet.",
    );
  }

  async #isAllowed(message: IncomingChatMessage): Promise<boolean> {
    if (this.#options.allowedUserIds(message.platform).has(message.userId)) return true;
    return this.#options.pairing.isApproved(message.platform, message.userId);
  }

  async #refuse(message: IncomingChatMessage): Promise<void> {
    const { pairing, clock, logger } = this.#options;
    const { platform, userId, userName, chatId } = message;
    logger.warn(
      { platform, user: userId, userName, chat: chatId },
      "message from a user who is not allowed; no job",
    );
    const now = clock.now();
    if (!(await pairing.noteRefusal(platform, userId, now))) return;
    // A code and an id said in a group are the whole group's: a code is given in private.
    if (!message.direct) return await this.#options.answer(message, GROUP_REFUSAL);
    const request = await pairing.requestCode({ platform, userId, userName, chatId }, now);
    const intro = `Sorry, I only answer people my owner allowed. Your ${platform} user id is ${userId}.`;
    const ask = ` To be let in, ask the owner to run: picklebot pairing approve ${request.code} (valid for ${PAIRING_CODE_TTL_MS / 60_000} minutes).`;
    await this.#options.answer(message, intro + ask);
  }

  async #enqueue(message: IncomingChatMessage, task: JobTask = "turn"): Promise<void> {
    const { queue, logger } = this.#options;
    const sessionKey = chatSessionKey(message);
    const { agentId } = await this.#agents.current(message);
    const job = await queue.enqueue({
      agentId,
      sessionKey,
      sessionId: null,
      message: message.text,
      ...(message.attachments && task === "turn" ? { attachments: message.attachments } : {}),
      task,
      mode: "chat",
      replyTo: chatReplyTarget(message),
      dedupeKey: `${message.platform}:${message.messageId}`,
      sender: chatSender(message),
    });
    logger.info({ job: job.id, session: sessionKey, user: message.userId }, "chat message queued");
  }
}

/** A chat message's conversation, as the chat commands see it. */
class InboxChat implements ChatContext {
  /** The chat's session key, `<platform>:<chat id>`. */
  readonly key: string;
  readonly message: IncomingChatMessage;
  readonly #agents: ChatAgents;
  readonly #options: ChatInboxOptions;

  constructor(message: IncomingChatMessage, agents: ChatAgents, options: ChatInboxOptions) {
    this.message = message;
    this.key = chatSessionKey(message);
    this.#agents = agents;
    this.#options = options;
  }

  agent(): Promise<ChatAgent> {
    return this.#agents.current(this.message);
  }

  /** The chat's current session, unless it is another agent's: the next message starts a new one. */
  async session(): Promise<Session | null> {
    const { agentId } = await this.agent();
    const current = await this.#options.history.currentSession(this.key);
    return current?.agentId === agentId ? current : null;
  }

  startSession(agentId: string): Promise<Session> {
    return this.#options.history.createSession({ key: this.key, agentId });
  }

  owner(): boolean {
    return this.#options.allowedUserIds(this.message.platform).has(this.message.userId);
  }

  chooseModel(sessionId: string, model: string): Promise<void> {
    return this.#options.history.setSessionModel(sessionId, model);
  }

  reply(text: string): Promise<void> {
    return this.#options.answer(this.message, text);
  }

  sender(): JobSender {
    return chatSender(this.message);
  }

  async queue(): Promise<ConversationQueue> {
    const { queue } = this.#options;
    const jobsOf = (state: "running" | "queued") =>
      queue.list({ sessionKey: this.key, state, limit: 1000 });
    const [running, queued] = await Promise.all([jobsOf("running"), jobsOf("queued")]);
    return { running: running.length > 0, waiting: queued.length };
  }
}

/** The person who sent a chat message, and whether the chat is theirs alone with the bot. */
function chatSender(message: IncomingChatMessage): JobSender {
  return { person: chatPersonKey(message.platform, message.userId), direct: message.direct };
}
