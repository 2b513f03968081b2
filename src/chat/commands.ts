/**
 * The chat commands, written once for every place a person chats with an agent: Telegram
 * and Discord (the inbox, inbox.ts) and the terminal (`picklebot chat`, src/cli/chat.ts).
 * A command sees the conversation it was sent in only through a {@link ChatContext},
 * which each place implements, so `/status`, `/usage`, `/new`, `/agent`, `/memory` and
 * `/forget` answer alike
 * everywhere; a place adds what only it can do (`/stop` and a queued `/compact` in a
 * chat; `/sessions`, `/exit` and an immediate `/compact` at the terminal).
 *
 *   "/word rest" ─► parseChatCommand ─► in the place's ChatCommandSet? ── yes ─► run(context, rest)
 *                                                │ no
 *                                                └─► the place decides: the terminal refuses
 *                                                    it with the list (refusal()); a chat
 *                                                    sends it to the agent as a message
 */
import { formatContextUsage } from "../agents/context-budget.js";
import { clearText } from "../agents/memory/editing.js";
import { fullness } from "../agents/memory/owner.js";
import type { PriceTable } from "../agents/prices.js";
import { formatUsd, spendNow, summarizeUsage } from "../agents/usage-report.js";
import { didYouMean } from "../config/index.js";
import {
  CHAT_COMMANDS,
  type ChatCommandName,
  type Clock,
  type JobSender,
  type MemoryStore,
  type RecallStore,
  type Session,
  type UsageLedger,
} from "../ports/index.js";
import type { ChatAgent, ChatAgentDirectory } from "./agents.js";

/** A conversation's jobs in the queue, as `/status` shows them. */
export interface ConversationQueue {
  /** A reply is being written. */
  running: boolean;
  /** Messages queued behind it. */
  waiting: number;
}

/**
 * One conversation as a chat command sees it: the port between the commands and the
 * places people chat in. The inbox implements it for a chat message (its chat's session
 * key, `bindings`, the outbox), the terminal for its running chat.
 */
export interface ChatContext {
  /** The agent the next message goes to. */
  agent(): Promise<ChatAgent>;
  /** The session the next message continues; null when that message starts a new one. */
  session(): Promise<Session | null>;
  /** Starts a new session of the conversation with `agentId`: the next message continues it. */
  startSession(agentId: string): Promise<Session>;
  /**
   * The person typing owns the bot (picklebot.yaml's `allowed_user_ids`, not a paired
   * user; the terminal's user): `/model NAME` is theirs.
   */
  owner(): boolean;
  /** Sets a session's named model (`/model NAME`), kept with the session. */
  chooseModel(sessionId: string, model: string): Promise<void>;
  /** Answers the command in the conversation. */
  reply(text: string): Promise<void>;
  /** The conversation's jobs; null where messages are not queued (the terminal runs each at once). */
  queue(): Promise<ConversationQueue | null>;
  /** Who sent the command (their person key), and whether the conversation is theirs alone. */
  sender(): JobSender;
}

/** A command: its line in `/help`, and what it does in a conversation of type `C`. */
export interface ChatCommandSpec<C extends ChatContext = ChatContext> {
  /** One line, without the name: "Start a new conversation". */
  description: string;
  /** Runs the command; `argument` is the text after its name, trimmed ("" for none). */
  run(chat: C, argument: string): Promise<void>;
}

/** The named models `/model` shows and switches to, and `/status` names. */
export interface ChatModels {
  /** Every entry name, `default` first. */
  names: readonly string[];
  /**
   * The entries a conversation of `agentId` calls, in order, with its `/model` choice
   * (null: none): each with its model id.
   */
  chainOf(agentId: string, model: string | null): ReadonlyArray<{ name: string; model: string }>;
}

/** What the commands every place shares read. */
export interface CommonCommandsOptions {
  /** The named models, for `/model` and `/status`. */
  models: ChatModels;
  /** The agents `/agent` lists and switches to. */
  agents: ChatAgentDirectory;
  /** A session's size (estimated tokens of its next request) against its agent's window. */
  contextUsage: (agentId: string, sessionId: string) => Promise<{ tokens: number; window: number }>;
  /** Model calls, for `/usage`. */
  usage: UsageLedger;
  /** Pricing of `/usage`: `llm.prices`, and the zone whose calendar day is "today". */
  pricing: { prices: PriceTable; timezone: string };
  clock: Clock;
  /** The memories `/memory` shows and `/forget` clears. */
  memory: MemoryStore;
  /** Sessions' memory snapshots: `/forget` has the current session take a new one. */
  recall: RecallStore;
}

/** The commands every place offers. */
export type CommonCommandName =
  | "new"
  | "status"
  | "usage"
  | "agent"
  | "model"
  | "memory"
  | "forget";

/** The word that makes `/forget` clear: `/forget confirm`. */
export const FORGET_CONFIRMATION = "confirm";

/** A command typed: `/Agent@picklebot coder` is `{ name: "agent", argument: "coder" }`. */
export interface TypedCommand {
  /** Lower case, without the `/` and a bot mention. */
  name: string;
  argument: string;
}

/** The command `text` is (a `/word`, alone or followed by a space), or null for a message. */
export function parseChatCommand(text: string): TypedCommand | null {
  const [, name, argument = ""] = /^\/(\w+)(?:@\S*)?(?:\s+([\s\S]*))?$/.exec(text.trim()) ?? [];
  return name === undefined ? null : { name: name.toLowerCase(), argument: argument.trim() };
}

/** The description {@link CHAT_COMMANDS} gives `name`, the one `/help` and menus show. */
export function describeChatCommand(name: Exclude<ChatCommandName, "start">): string {
  const found = CHAT_COMMANDS.find((command) => command.command === name);
  if (!found) throw new RangeError(`no chat command "${name}" in CHAT_COMMANDS`);
  return found.description;
}

/** `/new`, `/status`, `/usage`, `/agent` and `/model`, on any {@link ChatContext}. */
export function commonCommands(
  options: CommonCommandsOptions,
): Record<CommonCommandName, ChatCommandSpec> {
  return {
    new: { description: describeChatCommand("new"), run: (chat) => newSession(chat) },
    status: { description: describeChatCommand("status"), run: (chat) => status(chat, options) },
    usage: { description: describeChatCommand("usage"), run: (chat) => usage(chat, options) },
    agent: {
      description: describeChatCommand("agent"),
      run: (chat, name) =>
        name === "" ? listAgents(chat, options.agents) : switchAgent(chat, options.agents, name),
    },
    model: {
      description: describeChatCommand("model"),
      run: (chat, name) =>
        name === "" ? showModel(chat, options.models) : switchModel(chat, options.models, name),
    },
    memory: {
      description: describeChatCommand("memory"),
      run: (chat) => showMemory(chat, options),
    },
    forget: {
      description: describeChatCommand("forget"),
      run: (chat, argument) => forget(chat, options, argument),
    },
  };
}

/** Options of a {@link ChatCommandSet}. */
export interface ChatCommandSetOptions {
  /** The first line of `/help`. */
  intro: string;
  /** Other names a command answers to, unlisted: `{ start: "help" }`. (Default: none) */
  aliases?: Record<string, string>;
  /** Lines `/help` ends with (keys that are not commands). (Default: none) */
  notes?: readonly string[];
}

/** The commands of one place, in `/help`'s order, `/help` itself last. */
export class ChatCommandSet<C extends ChatContext> {
  /** What `/help` answers. */
  readonly help: string;
  readonly #commands: ReadonlyMap<string, ChatCommandSpec<C>>;
  readonly #aliases: Readonly<Record<string, string>>;

  constructor(commands: Record<string, ChatCommandSpec<C>>, options: ChatCommandSetOptions) {
    const help: ChatCommandSpec<C> = {
      description: describeChatCommand("help"),
      run: (chat) => chat.reply(this.help),
    };
    this.#commands = new Map([...Object.entries(commands), ["help", help]]);
    this.#aliases = options.aliases ?? {};
    this.help = [
      options.intro,
      ...[...this.#commands].map(([name, command]) => `/${name}: ${command.description}`),
      ...(options.notes ?? []),
    ].join("\n");
  }

  /** The command named `name` (lower case) or one of its aliases, if this place has it. */
  find(name: string): ChatCommandSpec<C> | undefined {
    const own = Object.hasOwn(this.#aliases, name) ? this.#aliases[name] : name;
    return own === undefined ? undefined : this.#commands.get(own);
  }

  /** The answer to `/name` when this place has no such command: the list of those it has. */
  refusal(name: string): string {
    return `/${name} is not a command here; nothing was sent to the agent.\n${this.help}`;
  }
}

async function newSession(chat: ChatContext): Promise<void> {
  const { agentId } = await chat.agent();
  const session = await chat.startSession(agentId);
  await chat.reply(
    `Started a new conversation (${session.id}). Earlier messages are kept but no longer sent to the agent.`,
  );
}

async function status(chat: ChatContext, options: CommonCommandsOptions): Promise<void> {
  const { agentId, pinnedBy } = await chat.agent();
  const session = await chat.session();
  const size = session
    ? `${session.messageCount} messages, ${formatContextUsage(await options.contextUsage(session.agentId, session.id))}; ${session.usage.input + session.usage.output} tokens used in all`
    : "none yet";
  const queue = await chat.queue();
  const lines = [
    `Agent: ${agentId}${pinnedBy === null ? "" : ` (pinned by ${pinnedBy})`}`,
    `Model: ${describeChain(options.models.chainOf(agentId, session?.model ?? null))}`,
    `Conversation: ${size}`,
  ];
  const lastModel = session && (await lastModelOf(options.usage, session.id));
  if (lastModel) lines.push(`Last answer: ${lastModel}`);
  if (queue) {
    const running = queue.running ? "a reply is running" : "nothing running";
    lines.push(`Queue: ${running}, ${queue.waiting} waiting`);
  }
  await chat.reply(lines.join("\n"));
}

/** `/usage`: the conversation's current session, and today's and this month's cost in all. */
async function usage(chat: ChatContext, options: CommonCommandsOptions): Promise<void> {
  const { pricing, clock } = options;
  const session = await chat.session();
  const spend = await spendNow(options.usage, { now: clock.now(), ...pricing });
  const everywhere = `Today: ${formatUsd(spend.todayUsd)}; this month: ${formatUsd(spend.monthUsd)} (every chat and cron)`;
  if (!session) return chat.reply(`This conversation: no model calls yet\n${everywhere}`);
  const calls = await options.usage.calls({ since: 0, sessionId: session.id });
  const { total } = summarizeUsage(calls, { by: "session", ...pricing });
  const tokens = `${total.input} in, ${total.output} out, ${total.cacheRead} read from the cache, ${total.cacheWrite} written to it`;
  await chat.reply(
    `This conversation: ${total.calls} model calls, ${formatUsd(total.costUsd)} (${tokens})\n${everywhere}`,
  );
}

/** `/agent`: every agent, the conversation's current one marked. */
async function listAgents(chat: ChatContext, directory: ChatAgentDirectory): Promise<void> {
  const { agentId, pinnedBy } = await chat.agent();
  const lines = directory.agents.map(
    (agent) =>
      `${agent.id === agentId ? "▸" : "•"} ${agent.id}: ${agent.name}, ${agent.description}`,
  );
  const footer =
    pinnedBy === null
      ? "Switch with /agent NAME (starts a new conversation)."
      : `This chat is pinned to ${agentId} by ${pinnedBy} in picklebot.yaml.`;
  await chat.reply([`Agents (this chat: ${agentId}):`, ...lines, footer].join("\n"));
}

/**
 * `/agent NAME`: starts a new session with that agent, unless the conversation is pinned
 * or the name is unknown.
 */
async function switchAgent(
  chat: ChatContext,
  directory: ChatAgentDirectory,
  name: string,
): Promise<void> {
  const { agentId, pinnedBy } = await chat.agent();
  if (pinnedBy !== null) {
    return chat.reply(
      `This chat is pinned to ${agentId} by ${pinnedBy} in picklebot.yaml; edit that entry to change its agent.`,
    );
  }
  const agent = directory.agents.find(
    (candidate) => candidate.id.toLowerCase() === name.toLowerCase(),
  );
  if (!agent) {
    const ids = directory.agents.map((candidate) => candidate.id).join(", ");
    return chat.reply(
      `There is no agent "${name}". Agents: ${ids}. Send /agent to see what each does.`,
    );
  }
  const session = await chat.startSession(agent.id);
  await chat.reply(
    `Switched to ${agent.id} (${agent.name}), in a new conversation (${session.id}).`,
  );
}

/** "backup (backup-model), then default (claude-sonnet-4-6)": a chain, head first. */
function describeChain(chain: ReadonlyArray<{ name: string; model: string }>): string {
  const [head, ...fallbacks] = chain.map(({ name, model }) => `${name} (${model})`);
  const then = fallbacks.length > 0 ? `; fallbacks: ${fallbacks.join(", ")}` : "; no fallbacks";
  return `${head ?? "none"}${then}`;
}

/** The model of the session's last call, from the usage ledger (a fallback's shows here). */
async function lastModelOf(usage: UsageLedger, sessionId: string): Promise<string | undefined> {
  const calls = await usage.calls({ since: 0, sessionId });
  return calls.at(-1)?.model;
}

/** `/model`: the conversation's model and fallbacks, and the named models there are. */
async function showModel(chat: ChatContext, models: ChatModels): Promise<void> {
  const { agentId } = await chat.agent();
  const chosen = (await chat.session())?.model ?? null;
  const whose = chosen === null ? `${agentId}'s` : "chosen with /model";
  const footer = chat.owner()
    ? "Switch with /model NAME (for this conversation; /new goes back to the agent's)."
    : "Only the owner can switch it.";
  await chat.reply(
    [
      `Model (${whose}): ${describeChain(models.chainOf(agentId, chosen))}`,
      `Named models: ${models.names.join(", ")}`,
      footer,
    ].join("\n"),
  );
}

/** The memory of the sender with the conversation's agent, or null after replying why there is none. */
async function sendersMemory(chat: ChatContext, options: CommonCommandsOptions) {
  const { agentId } = await chat.agent();
  const settings = options.agents.agents.find((agent) => agent.id === agentId)?.memory ?? null;
  if (settings === null) {
    await chat.reply(`${agentId} keeps no memory (its AGENT.md says memory: false).`);
    return null;
  }
  const { person } = chat.sender();
  const stored = await options.memory.read(agentId, person);
  return { agentId, person, text: stored.text, budget: settings.personChars };
}

/**
 * `/memory`: what the conversation's agent remembers about the sender, only where the
 * conversation is theirs alone; in a group every member would read it
 * (docs/decisions/memory-chat-commands.md).
 */
async function showMemory(chat: ChatContext, options: CommonCommandsOptions): Promise<void> {
  if (!chat.sender().direct) {
    return chat.reply(
      "What I remember about you is shown only in a private chat with me: send /memory there.",
    );
  }
  const memory = await sendersMemory(chat, options);
  if (memory === null) return;
  const { agentId, text, budget } = memory;
  if (text === "") return chat.reply(`${agentId} remembers nothing about you yet.`);
  await chat.reply(
    `What ${agentId} remembers about you (${fullness(text, budget)}):\n${text}\n\n` +
      "Ask me to change or remove something, or send /forget to clear it all.",
  );
}

/**
 * `/model NAME`: the conversation's session uses that named model from its next message
 * on (a new session when it has none), for the owner only.
 */
async function switchModel(chat: ChatContext, models: ChatModels, name: string): Promise<void> {
  if (!chat.owner()) return chat.reply("Only the owner can switch this chat's model.");
  const entry = models.names.find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  if (entry === undefined) {
    const suggestion = didYouMean(name, models.names);
    return chat.reply(
      `There is no named model "${name}"${suggestion ? ` (${suggestion})` : ""}. Named models: ${models.names.join(", ")}.`,
    );
  }
  const { agentId } = await chat.agent();
  const session = (await chat.session()) ?? (await chat.startSession(agentId));
  await chat.chooseModel(session.id, entry);
  await chat.reply(
    `This conversation now uses ${describeChain(models.chainOf(agentId, entry))}. /new goes back to the agent's model.`,
  );
}

/**
 * `/forget`: asks for `/forget confirm`, which clears what the conversation's agent
 * remembers about the sender, recorded as a change by `chat`. The current session takes
 * its memory again at its next message, so the agent no longer sees what was cleared.
 */
async function forget(
  chat: ChatContext,
  options: CommonCommandsOptions,
  argument: string,
): Promise<void> {
  const memory = await sendersMemory(chat, options);
  if (memory === null) return;
  const { agentId, person, text } = memory;
  if (text === "") return chat.reply(`${agentId} remembers nothing about you; nothing to clear.`);
  if (argument.toLowerCase() !== FORGET_CONFIRMATION) {
    return chat.reply(
      `This clears everything ${agentId} remembers about you, for good. To do it, send /forget ${FORGET_CONFIRMATION}`,
    );
  }
  const session = await chat.session();
  const origin = { by: "chat", at: options.clock.now(), sessionId: session?.id };
  const result = await options.memory.update({ agentId, scope: person }, origin, clearText());
  if (session) await options.recall.retake(session.id);
  if (result.status === "refused") {
    return chat.reply(`${agentId} remembers nothing about you; nothing to clear.`);
  }
  await chat.reply(
    `Done: ${agentId} remembers nothing about you now. What you said earlier in this conversation is still part of it; /new starts afresh.`,
  );
}
