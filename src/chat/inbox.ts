/**
 * What happens to a message a chat platform received, for every platform alike:
 *
 *   sender allowed (allowed_user_ids or paired)? ── no ─► logged; at most once an hour a
 *      │                                              refusal with their id and a code
 *      yes
 *      ├─ /new, /status, /usage, /stop, /agent, /start, /help, or no text ─► answered here, no job
 *      └─ anything else (and /compact) ─► one chat job for the chat's agent (chat-agents.ts),
 *                          session key `<platform>:<chat id>`, dedupe key
 *                          `<platform>:<message id>` (a redelivered update adds nothing),
 *                          sender `<platform>:<user id>` (whose memory it reads and writes)
 */

import { formatContextUsage } from "../agents/context-budget.js";
import type { PriceTable } from "../agents/prices.js";
import { formatUsd, spendNow, summarizeUsage } from "../agents/usage-report.js";
import { chatReplyTarget } from "../base/chat-address.js";
import { StorageUnavailableError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { chatPersonKey } from "../base/person-key.js";
import { chatSessionKey } from "../base/session-key.js";
import {
  CHAT_COMMANDS,
  type ChatCommandName,
  type ChatPlatformKind,
  type Clock,
  type HistoryStore,
  type IncomingChatMessage,
  type JobAdmin,
  type JobQueue,
  type JobTask,
  PAIRING_CODE_TTL_MS,
  type PairingStore,
  type UsageLedger,
} from "../ports/index.js";
import { type ChatAgentDirectory, ChatAgents } from "./agents.js";

/** The answer to a stranger in a group: no code, no id, where to ask instead. */
export const GROUP_REFUSAL =
  "Sorry, I only answer people my owner allowed. To ask for access, write to me in a private chat.";

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
  /** Pricing of `/usage`: `llm.prices`, and the zone whose calendar day is "today". */
  pricing: { prices: PriceTable; timezone: string };
  clock: Clock;
  logger: Logger;
}

const HELP = [
  "Send me a message and I will answer. Commands:",
  ...CHAT_COMMANDS.map(({ command, description }) => `/${command}: ${description}`),
].join("\n");

/** Turns accepted messages into jobs and answers chat commands. */
export class ChatInbox {
  readonly #options: ChatInboxOptions;
  /** Each command's answer, or null when a job it queued answers in the chat. */
  readonly #commands: Record<
    ChatCommandName,
    (message: IncomingChatMessage, argument: string) => Promise<string | null>
  >;
  readonly #agents: ChatAgents;

  constructor(options: ChatInboxOptions) {
    this.#options = options;
    this.#agents = new ChatAgents(options.agents, options.history);
    this.#commands = {
      new: (message) => this.#newSession(message),
      status: (message) => this.#status(message),
      usage: (message) => this.#usage(message),
      stop: (message) => this.#stop(chatSessionKey(message)),
      compact: async (message) => {
        await this.#enqueue(message, "compact");
        return null;
      },
      agent: (message, name) =>
        name === "" ? this.#agents.list(message) : this.#agents.switchTo(message, name),
      start: async () => HELP,
      help: async () => HELP,
    };
  }

  /**
   * `/stop`: aborts the chat's running job, or stops its job that waits (for a subagent,
   * an approval, a time); the subagents of either are stopped with it.
   */
  async #stop(sessionKey: string): Promise<string> {
    const { queue, stopSession } = this.#options;
    if (await stopSession(sessionKey)) return "Stopping the reply in progress.";
    const waiting = await queue.list({ sessionKey, state: "waiting" });
    let stopped = 0;
    for (const job of waiting) if (await queue.requestStop(job.id)) stopped += 1;
    return stopped > 0
      ? "Stopping the reply that was waiting."
      : "Nothing is running in this chat.";
  }

  /**
   * Handles one message: resolves once its job or its answer is stored. Throws only when
   * the storage is unavailable (locked, full, unreachable): the platform then does not
   * confirm the message and hands it over again. Other failures are logged and told to
   * the sender.
   */
  async handle(message: IncomingChatMessage): Promise<void> {
    const { logger } = this.#options;
    try {
      if (!(await this.#isAllowed(message))) return await this.#refuse(message);
      const [, command, argument = ""] =
        /^\/(\w+)(?:@\S*)?(?:\s+([\s\S]*))?$/.exec(message.text.trim()) ?? [];
      const run = command === undefined ? undefined : this.#command(command);
      if (run) {
        const answer = await run(message, argument.trim());
        // null: the command's job answers in the chat (e.g. /compact).
        return answer === null ? undefined : await this.#options.answer(message, answer);
      }
      // A bare mention ("@bot") leaves no text: the model would refuse an empty message.
      if (message.text.trim() === "") return await this.#options.answer(message, HELP);
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

  #command(name: string) {
    const key = name.toLowerCase();
    return Object.hasOwn(this.#commands, key) ? this.#commands[key as ChatCommandName] : undefined;
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
      task,
      mode: "chat",
      replyTo: chatReplyTarget(message),
      dedupeKey: `${message.platform}:${message.messageId}`,
      sender: { person: chatPersonKey(message.platform, message.userId), direct: message.direct },
    });
    logger.info({ job: job.id, session: sessionKey, user: message.userId }, "chat message queued");
  }

  async #newSession(message: IncomingChatMessage): Promise<string> {
    const { history } = this.#options;
    const { agentId } = await this.#agents.current(message);
    const session = await history.createSession({ key: chatSessionKey(message), agentId });
    return `Started a new conversation (${session.id}). Earlier messages are kept but no longer sent to the agent.`;
  }

  async #status(message: IncomingChatMessage): Promise<string> {
    const { history, queue } = this.#options;
    const { agentId, binding } = await this.#agents.current(message);
    const key = chatSessionKey(message);
    const current = await history.currentSession(key);
    // A session of another agent is not continued: the next message starts a new one.
    const session = current?.agentId === agentId ? current : null;
    const size = session
      ? `${session.messageCount} messages, ${formatContextUsage(await this.#options.contextUsage(session.agentId, session.id))}; ${session.usage.input + session.usage.output} tokens used in all`
      : "none yet";
    const running = (await queue.list({ state: "running", limit: 1000 })).some(
      (job) => job.sessionKey === key,
    );
    const waiting = (await queue.list({ state: "queued", limit: 1000 })).filter(
      (job) => job.sessionKey === key,
    ).length;
    const queueLine = `${running ? "a reply is running" : "nothing running"}, ${waiting} waiting`;
    const pinned = binding === null ? "" : ` (pinned by bindings[${binding}])`;
    return [`Agent: ${agentId}${pinned}`, `Conversation: ${size}`, `Queue: ${queueLine}`].join(
      "\n",
    );
  }

  /** `/usage`: the chat's current session, and today's and this month's cost in all. */
  async #usage(message: IncomingChatMessage): Promise<string> {
    const { history, usage, pricing, clock } = this.#options;
    const session = await history.currentSession(chatSessionKey(message));
    const spend = await spendNow(usage, { now: clock.now(), ...pricing });
    const everywhere = `Today: ${formatUsd(spend.todayUsd)}; this month: ${formatUsd(spend.monthUsd)} (every chat and cron)`;
    if (!session) return `This conversation: no model calls yet\n${everywhere}`;
    const calls = await usage.calls({ since: 0, sessionId: session.id });
    const { total } = summarizeUsage(calls, { by: "session", ...pricing });
    const tokens = `${total.input} in, ${total.output} out, ${total.cacheRead} read from the cache, ${total.cacheWrite} written to it`;
    return [
      `This conversation: ${total.calls} model calls, ${formatUsd(total.costUsd)} (${tokens})`,
      everywhere,
    ].join("\n");
  }
}
