/**
 * The contracts of picklebot, in one place. Adapters live in one folder per port
 * (`src/queue/`, `src/history/`, `src/frontends/`, `src/agents/`) and implement these
 * interfaces and nothing more.
 *
 * Glossary
 * - **Agent**: a system prompt plus a tool list, defined in `agents/<id>/AGENT.md`.
 * - **Session**: one conversation with an agent, stored durably in the history store.
 *   Its **session key** names the conversation it belongs to (`telegram:<chat_id>`,
 *   `discord:<channel_id>`, `cron:<id>:<occurrence>`, `console:<name>`); a key may have
 *   had several sessions over time (`/new`), the newest one is its current session.
 * - **Turn**: a user message and everything the agent did to answer it (tool calls,
 *   tool results, the final reply).
 * - **Job**: a request to run one turn, stored in the job queue as plain data.
 * - **Worker**: a long-running part of the server (AgentWorker, CronWorker,
 *   MessageBusWorker) that the supervisor starts, watches and restarts.
 * - **Frontend**: where a person sees an agent's work (console, Telegram, Discord, or
 *   nowhere: silent). A job names its frontend by a plain {@link ReplyTarget}.
 * - **Checkpoint**: the moment a job's user message is written to history; from then on
 *   the job's message is `"."` and a retry resumes from history instead of starting over.
 */

// ---------------------------------------------------------------------------------------
// Messages (Anthropic content blocks, kept exactly)

/** Plain text in a message. */
export interface TextBlock {
  type: "text";
  text: string;
}

/** The model asks for a tool to run. */
export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
}

/** The result of a tool run, sent back to the model in a user message. */
export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/** Any block a stored message may hold. */
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock;

/** One message of a conversation, as the Anthropic Messages API takes it. */
export interface ChatMessage {
  role: "user" | "assistant";
  content: ContentBlock[];
}

/** Tokens used by one model call, from the response's `usage`. */
export interface TokenUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

// ---------------------------------------------------------------------------------------
// HistoryStore

/** A stored conversation. Times are epoch milliseconds. */
export interface Session {
  id: string;
  key: string;
  agentId: string;
  /** From the first user message; null until there is one. */
  title: string | null;
  createdAt: number;
  updatedAt: number;
  messageCount: number;
  /** Tokens summed over every model call of the session. */
  usage: TokenUsage;
}

/** Options of {@link HistoryStore.append}. */
export interface AppendOptions {
  /**
   * The job that wrote this message. A user message with a job id is appended at most
   * once: a second append with the same job id is ignored and returns false.
   */
  jobId?: string;
  /** Tokens the model call that produced this message used; added to the session. */
  usage?: TokenUsage;
}

/** Durable store of sessions and their messages. */
export interface HistoryStore {
  /** Creates a session for `key`, which becomes that key's current session. */
  createSession(init: { key: string; agentId: string }): Promise<Session>;
  /** The session with this id, or null. */
  getSession(id: string): Promise<Session | null>;
  /** The newest session of a key, or null when the key has none. */
  currentSession(key: string): Promise<Session | null>;
  /** Sessions, newest first. (Default: every key, limit 20) */
  listSessions(options?: { key?: string; limit?: number }): Promise<Session[]>;
  /** Appends a message; false when `jobId` was already appended (nothing written). */
  append(sessionId: string, message: ChatMessage, options?: AppendOptions): Promise<boolean>;
  /**
   * The last messages of one session for the next model call: at most `maxMessages`,
   * cut only at the start of a turn, so every tool_use keeps its tool_result. A turn
   * longer than `maxMessages` is returned whole.
   */
  loadContext(sessionId: string, maxMessages: number): Promise<ChatMessage[]>;
  /** Closes files and connections. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------
// ModelProvider

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input (an object schema). */
  input_schema: Record<string, unknown>;
}

/** One call to the model. */
export interface ModelRequest {
  model: string;
  system: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  maxTokens: number;
  /**
   * The current time, shown to the model after the newest message's cache breakpoint,
   * so that a new time never invalidates the cached prompt. (Default: not sent)
   */
  currentTime?: string;
  /** Aborts the call (job timeout, `/stop`, Ctrl+C). */
  signal?: AbortSignal;
  /** Receives the reply's text as it streams. */
  onText?: (delta: string) => void;
}

/** What the model answered. */
export interface ModelReply {
  content: Array<TextBlock | ToolUseBlock>;
  /** `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`, … */
  stopReason: string;
  usage: TokenUsage;
}

/** A language model behind an API. Failures throw {@link ModelError}. */
export interface ModelProvider {
  /** Streams one reply. */
  complete(request: ModelRequest): Promise<ModelReply>;
}

// ---------------------------------------------------------------------------------------
// Jobs and the JobQueue

/** Where a job's reply goes: plain data, resolved to a live {@link Frontend} at run time. */
export type ReplyTarget =
  | { kind: "telegram"; chatId: string }
  | { kind: "discord"; channelId: string }
  | { kind: "console" }
  | { kind: "silent" };

/** `queued` (waiting or scheduled), `running` (claimed), `done`, `failed` (gave up). */
export type JobState = "queued" | "running" | "done" | "failed";

/** One failed attempt, kept in the job's error history. */
export interface JobAttemptError {
  attempt: number;
  at: number;
  message: string;
}

/** What a producer hands to {@link JobQueue.enqueue}. */
export interface NewJob {
  agentId: string;
  sessionKey: string;
  /** Null: the worker picks the key's current session (chat) or a new one (job). */
  sessionId?: string | null;
  message: string;
  /** `chat`: continue the key's current session; `job`: a cron run in a fresh session. */
  mode: "chat" | "job";
  replyTo: ReplyTarget;
  /** (Default: `workers.max_attempts`) */
  maxAttempts?: number;
  /** Epoch ms before which the job is not run. (Default: now) */
  runAt?: number;
  /**
   * Idempotency key: enqueueing a second job with a key already in the queue stores
   * nothing and returns the first job (a cron occurrence, a chat update id).
   */
  dedupeKey?: string;
}

/** A job as stored. Times are epoch milliseconds. */
export interface Job {
  id: string;
  agentId: string;
  sessionKey: string;
  sessionId: string | null;
  message: string;
  mode: "chat" | "job";
  replyTo: ReplyTarget;
  state: JobState;
  /** Attempts started so far (a claim counts one). */
  attempts: number;
  maxAttempts: number;
  runAt: number;
  lockedBy: string | null;
  lockedAt: number | null;
  lastError: string | null;
  errors: JobAttemptError[];
  createdAt: number;
  updatedAt: number;
}

/** A job claimed by a worker; `lockToken` fences every later change to it. */
export interface ClaimedJob extends Job {
  lockToken: string;
}

/**
 * The durable queue between producers (bus, crons, CLI) and AgentWorkers.
 *
 * Per-session order: a job is claimable only when it is the oldest queued job of its
 * session key and no job of that key is running. Every change after the claim is
 * fenced: it applies only while the job is still running under the same lock token,
 * and returns false otherwise.
 */
export interface JobQueue {
  /** Stores a job; resolves only once it is durable. */
  enqueue(job: NewJob): Promise<Job>;
  /** Claims up to `limit` runnable jobs for `workerId`, oldest first. */
  claim(workerId: string, limit: number, options?: { agentIds?: string[] }): Promise<ClaimedJob[]>;
  /** Records the job's session and sets its message to `"."` (the checkpoint). */
  checkpoint(job: ClaimedJob, sessionId: string): Promise<boolean>;
  /** Marks the job done. */
  complete(job: ClaimedJob): Promise<boolean>;
  /** Records the error; requeues at `retryAt` (epoch ms), or fails the job when null. */
  fail(job: ClaimedJob, error: string, retryAt: number | null): Promise<boolean>;
  /** Requeues every job left running by `workerId` (a process that died). */
  recover(workerId: string): Promise<number>;
  /** Calls `listener` when a job may have become runnable; returns an unsubscribe. */
  onRunnable(listener: () => void): () => void;
  /** Stops timers and closes connections. */
  close(): Promise<void>;
}

/** Read and repair access to the queue, for the CLI and `/status`. */
export interface JobAdmin {
  /** The job with this id, or null. */
  get(id: string): Promise<Job | null>;
  /** Jobs, newest first. (Default: every state, limit 50) */
  list(options?: { state?: JobState; limit?: number }): Promise<Job[]>;
  /** Number of jobs in each state. */
  counts(): Promise<Record<JobState, number>>;
  /** Requeues a failed job with a fresh attempt budget; false when it is not failed. */
  retryFailed(id: string): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------
// Frontend

/** A reply in progress, as one frontend shows it. */
export interface ReplyStream {
  /** Shows that the agent is working (typing…). */
  typing(): void;
  /** The reply so far; the frontend shows it now or soon (it may throttle). */
  update(textSoFar: string): void;
  /** A tool call, shown as one short line. */
  toolCall(name: string, summary: string): void;
  /** The final reply; resolves once the platform confirmed it. */
  finish(text: string): Promise<void>;
  /** Tells the person the job failed. */
  fail(message: string): Promise<void>;
}

/** What a frontend may know about the reply it opens. */
export interface ReplyContext {
  /**
   * The job the reply answers. A reply opened again for the same job (a retry, a resume
   * after a crash) continues the first one, and its final text is delivered once.
   */
  jobId?: string;
}

/** A place where a person reads an agent's replies. */
export interface Frontend {
  /** The {@link ReplyTarget} kind this frontend serves. */
  readonly kind: ReplyTarget["kind"];
  /** Starts showing a reply to `target`. */
  openReply(target: ReplyTarget, context?: ReplyContext): ReplyStream;
}

// ---------------------------------------------------------------------------------------
// ChatPlatform: the network edge of one chat platform

/** The chat platforms picklebot runs a bot on. */
export type ChatPlatformKind = "telegram" | "discord";

/** A text message a person sent to the bot, already filtered by the platform's rules. */
export interface IncomingChatMessage {
  platform: ChatPlatformKind;
  /** Telegram chat id or Discord channel id: where the reply goes, and the session key. */
  chatId: string;
  /** The sender's platform user id, checked against `allowed_user_ids`. */
  userId: string;
  /** The sender's display name, for logs and `pairing list`. */
  userName: string;
  /** The text, with a leading bot mention removed. */
  text: string;
  /** True in a private chat / DM. */
  direct: boolean;
  /** Unique per platform (Telegram update id, Discord message id): dedupes redeliveries. */
  messageId: string;
}

/** A message the platform confirmed it stored. */
export interface SentChatMessage {
  messageId: string;
}

/** How a text is rendered: the platform's Markdown flavour, or plain text. */
export type TextFormat = "markdown" | "plain";

/** `connecting` (starting or reconnecting after a lost connection), `connected`, `stopped`. */
export type ChatPlatformState = "connecting" | "connected" | "stopped";

/**
 * One chat platform's bot connection (telegraf, discord.js): converts platform updates to
 * {@link IncomingChatMessage} and sends text. Allowlists, sessions, streaming, splitting
 * and retries live once in the core, not here.
 *
 * Failures of `send`, `edit` and `typing` throw {@link ChatPlatformError}.
 */
export interface ChatPlatform {
  readonly kind: ChatPlatformKind;
  /** Longest text one message may hold (Telegram 4096, Discord 2000). */
  readonly maxMessageLength: number;
  /** The connection's state, for `/healthz` and `status`. */
  readonly state: ChatPlatformState;
  /**
   * Connects and passes every accepted message to `onMessage`, which must return at once
   * (it only enqueues). Resolves once connected; a lost connection is retried with backoff.
   */
  start(onMessage: (message: IncomingChatMessage) => void): Promise<void>;
  /** Stops receiving first (Telegram commits its update offset), then disconnects. */
  stop(): Promise<void>;
  /** Sends a new message to a chat. */
  send(chatId: string, text: string, format: TextFormat): Promise<SentChatMessage>;
  /** Replaces the text of a message the bot sent ("not modified" counts as success). */
  edit(chatId: string, messageId: string, text: string, format: TextFormat): Promise<void>;
  /** Shows the typing indicator for a few seconds. */
  typing(chatId: string): Promise<void>;
}
