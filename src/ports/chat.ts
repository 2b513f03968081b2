/**
 * The chat ports: a chat platform's bot connection (the network edge), the durable outbox
 * of replies to it, and the pairing of people the owner admits.
 */

// ---------------------------------------------------------------------------------------
// ChatPlatform

/**
 * The chat platforms picklebot runs a bot on, and what every layer needs to know of each:
 * `chatId`, the syntax of a chat id (Telegram's chat id, Discord's channel id) in an
 * address such as a cron's `deliver_to` (`telegram:<chat_id>`), described by `chatIdHint`;
 * `userId`, the syntax of a person's id in a person key (`telegram:<user id>`, the key of
 * their memory), described by `userIdHint`.
 * A job's {@link ReplyTarget} names the chat the same way on every platform:
 * `{ kind: "discord", chatId }`. A platform's adapter is registered in
 * `src/chat/platforms.ts` and its `picklebot.yaml` section in `src/config/schema.ts`;
 * the compiler refuses a platform missing from either.
 */
export const CHAT_PLATFORMS = {
  telegram: {
    chatId: /^(-?\d+|@\w+)$/,
    chatIdHint: "<chat_id>",
    userId: /^\d{1,32}$/,
    userIdHint: "<user id>",
    maxFileBytes: 50_000_000,
  },
  discord: {
    chatId: /^\d+$/,
    chatIdHint: "<channel_id>",
    userId: /^\d{1,32}$/,
    userIdHint: "<user id>",
    maxFileBytes: 25 * 1024 * 1024,
  },
  /**
   * A conversation id (`D…` DM, `C…`/`G…` channel), or `<channel>/<thread_ts>` for a thread;
   * a person by their member id (`U…`, or `W…` on Enterprise Grid).
   */
  slack: {
    chatId: /^[CDG][A-Z0-9]{2,}(\/\d+\.\d+)?$/,
    chatIdHint: "<channel_id>",
    userId: /^[UW][A-Z0-9]{2,}$/,
    userIdHint: "<member id>",
    maxFileBytes: 1_000_000_000,
  },
} as const;

/**
 * Largest photo Telegram's `sendPhoto` takes (10 MB); a larger image goes as a document,
 * up to {@link CHAT_PLATFORMS}' `maxFileBytes` (the Bot API's 50 MB upload limit; Discord's
 * default attachment limit is 25 MiB; Slack's upload limit is 1 GB).
 */
export const TELEGRAM_MAX_PHOTO_BYTES = 10_000_000;

/** Longest caption of a file, in UTF-16 code units (Telegram's limit; Discord's is 2000). */
export const MAX_FILE_CAPTION_LENGTH = 1024;

/**
 * How a file is shown: `photo` an image shown inline (Telegram `sendPhoto`; on Discord any
 * attachment), `voice` a voice message (Telegram `sendVoice`, OGG/Opus; Discord an audio
 * attachment), `document` any other file (Telegram `sendDocument`).
 */
export type OutgoingFileKind = "photo" | "document" | "voice";

/** A file to send with {@link ChatPlatform.sendFile}. */
export interface OutgoingFile {
  kind: OutgoingFileKind;
  /** The file name the chat shows, without folders. */
  name: string;
  /** Its media type, e.g. `application/pdf`. */
  mediaType: string;
  content: Buffer;
  /** A text shown with it, at most {@link MAX_FILE_CAPTION_LENGTH}; plain text. */
  caption?: string;
}

/** One of {@link CHAT_PLATFORMS}. */
export type ChatPlatformKind = keyof typeof CHAT_PLATFORMS;

/** A chat command: what a person types after `/`, and one line on what it does. */
export interface ChatCommand {
  /** 1-32 lowercase letters, digits and `_` (Telegram's rule for its command menu). */
  command: string;
  /** What the command does, 1-256 characters; `/help` and the command menu show it. */
  description: string;
}

/**
 * The chat commands, the same on every platform, in the order `/help` and Telegram's
 * command menu (`setMyCommands`) list them. `/start` is answered like `/help` but not
 * listed: Telegram sends it by itself when a person opens the bot.
 */
export const CHAT_COMMANDS = [
  { command: "new", description: "Start a new conversation" },
  { command: "status", description: "Show the agent, the conversation size and the queue" },
  { command: "usage", description: "Show the tokens and cost of this conversation and today" },
  { command: "compact", description: "Summarise the conversation so far" },
  { command: "stop", description: "Stop the reply in progress" },
  { command: "agent", description: "List the agents; /agent NAME switches this chat to one" },
  {
    command: "model",
    description: "Show this chat's model and fallbacks; /model NAME switches it (owner)",
  },
  { command: "reminders", description: "List this chat's reminders and recurring tasks" },
  {
    command: "heartbeat",
    description: "Show this chat's heartbeat; /heartbeat every 30m WHAT checks when idle (owner)",
  },
  { command: "transcript", description: "Show what I heard in your last voice note" },
  { command: "memory", description: "Show what the agent remembers about you" },
  { command: "forget", description: "Clear what the agent remembers about you" },
  { command: "help", description: "Show the commands" },
] as const satisfies readonly ChatCommand[];

/** A command the chats answer: one of {@link CHAT_COMMANDS}, or `start`. */
export type ChatCommandName = (typeof CHAT_COMMANDS)[number]["command"] | "start";

/**
 * What a file a person sent is, as the platform tells it: `image` (a photo, or an image
 * sent as a file), `voice` (a voice note), `audio` (a music or audio file), `document`
 * (any other file). The core decides what it becomes from the kind and the media type.
 */
export type ChatAttachmentKind = "image" | "voice" | "audio" | "document";

/** A file attached to a message, not yet downloaded (see {@link ChatPlatform.download}). */
export interface ChatAttachment {
  kind: ChatAttachmentKind;
  /**
   * What names the file on its platform, for {@link ChatPlatform.download}: Telegram's
   * `file_id`, Discord's attachment URL, Slack's `url_private_download`. Also what a
   * download is remembered by.
   */
  source: string;
  /** The file's name; platforms give none for photos and voice notes. (Default: made up from the kind) */
  name?: string;
  /** The media type the platform says the file has. (Default: unknown) */
  mimeType?: string;
  /** Bytes, as the platform says. (Default: unknown) */
  size?: number;
  /** Seconds a voice note or an audio file lasts, as the platform says. (Default: unknown) */
  durationS?: number;
}

/**
 * A downloaded file: its bytes, or its chunks as they arrive from the network (read once,
 * to the end), so a large file can be stored without being held whole in memory.
 */
export type FileDownload = Uint8Array | AsyncIterable<Uint8Array>;

/** A message a person sent to the bot, already filtered by the platform's rules. */
export interface IncomingChatMessage {
  platform: ChatPlatformKind;
  /** Telegram chat id or Discord channel id: where the reply goes, and the session key. */
  chatId: string;
  /** The sender's platform user id, checked against `allowed_user_ids`. */
  userId: string;
  /** The sender's display name, for logs and `pairing list`. */
  userName: string;
  /** The text (or a file's caption), with a leading bot mention removed. */
  text: string;
  /** Files sent with the message (photo, document, voice note…). (Default: none) */
  attachments?: ChatAttachment[];
  /**
   * What the message holds that picklebot cannot read, for people ("a location", "a
   * sticker"): the sender is told what it can read. (Default: none)
   */
  unreadable?: string[];
  /** True in a private chat / DM. */
  direct: boolean;
  /** Unique per platform (Telegram update id, Discord message id): dedupes redeliveries. */
  messageId: string;
}

/** How a button looks; a platform without button colours (Telegram) shows them all alike. */
export type ChoiceStyle = "primary" | "danger" | "secondary";

/** One button under a message sent with {@link ChatPlatform.sendChoices}. */
export interface Choice {
  /**
   * What a press reports back as {@link IncomingChoice.choiceId}: 1 to
   * {@link MAX_CHOICE_ID_BYTES} bytes of UTF-8, unique among the message's choices.
   */
  id: string;
  /** The button's text. */
  label: string;
  /** (Default: "secondary") */
  style?: ChoiceStyle;
}

/**
 * Longest {@link Choice.id} in UTF-8 bytes: Telegram's `callback_data` takes 1-64 bytes
 * (Discord's `custom_id` up to 100 characters; the stricter rule holds for both).
 */
export const MAX_CHOICE_ID_BYTES = 64;

/** Most buttons one message may carry: one row, and Discord puts at most 5 in a row. */
export const MAX_CHOICES = 5;

/**
 * A person pressed a button of a message the bot sent with {@link ChatPlatform.sendChoices}.
 * Like {@link IncomingChatMessage} it is not filtered by user: the core checks who pressed.
 */
export interface IncomingChoice {
  platform: ChatPlatformKind;
  /** The chat of the message carrying the buttons. */
  chatId: string;
  /** Who pressed, checked against `allowed_user_ids`. */
  userId: string;
  /** Their display name, for logs. */
  userName: string;
  /** True in a private chat / DM. */
  direct: boolean;
  /** The message carrying the buttons, as {@link SentChatMessage.messageId} gave it. */
  messageId: string;
  /** The {@link Choice.id} of the button pressed. */
  choiceId: string;
  /**
   * This press (Telegram callback query id, Discord interaction id), for
   * {@link ChatPlatform.acknowledgeChoice}; a platform that hands a press over again
   * gives it the same id.
   */
  pressId: string;
}

/** A message the platform confirmed it stored. */
export interface SentChatMessage {
  messageId: string;
}

/** How a text is rendered: the platform's Markdown flavour, or plain text. */
export type TextFormat = "markdown" | "plain";

/**
 * How long one Discord REST call (send, edit, typing, a login's `GET /gateway/bot`) may go
 * unanswered before it is abandoned as a retryable failure (`discord.call_timeout_s`).
 */
export const DEFAULT_DISCORD_CALL_TIMEOUT_MS = 15_000;

/**
 * How long one Slack Web API call may go unanswered before it is abandoned as a retryable
 * failure (`slack.call_timeout_s`).
 */
export const DEFAULT_SLACK_CALL_TIMEOUT_MS = 15_000;

/** `connecting` (starting or reconnecting after a lost connection), `connected`, `stopped`. */
export type ChatPlatformState = "connecting" | "connected" | "stopped";

/**
 * One chat platform's bot connection (telegraf, @discordjs/ws): converts platform updates to
 * {@link IncomingChatMessage} and sends text. Allowlists, sessions, streaming, splitting
 * and retries live once in the core, not here.
 *
 * Failures of `send`, `sendChoices`, `acknowledgeChoice`, `edit` and `typing` throw
 * {@link ChatPlatformError}. Sending, editing and typing need no `start()` (the chat
 * senders use instances they never start), and work after `stop()`. An instance is
 * started at most once: receiving again after `stop()` takes a new one.
 *
 * Every adapter proves this contract with one line: test/chat/platform.contract.ts.
 */
export interface ChatPlatform {
  readonly kind: ChatPlatformKind;
  /** Longest text one message may hold, in UTF-16 code units (Telegram 4096, Discord 2000). */
  readonly maxMessageLength: number;
  /**
   * Shortest time between two streaming edits of one chat the platform tolerates (Slack's
   * chat.update allows about 50 a minute); the core waits at least this long. (Default:
   * the core's interval alone)
   */
  readonly editIntervalMs?: number;
  /** The connection's state, for `/healthz` and `status`. */
  readonly state: ChatPlatformState;
  /**
   * While the platform refuses the login for a reason only the owner can fix (a bot token
   * refused, a privileged intent not enabled): why, with the fix, for `/healthz` and
   * `status`; the login is tried again with backoff meanwhile. Null otherwise.
   */
  readonly refusal: string | null;
  /**
   * Connects and passes every accepted message to `onMessage`, which resolves once the
   * message is durably handled (its job or its answer stored; it never waits for an agent
   * or a send). A platform that can hand a message over again (Telegram) confirms it only
   * after that, and gets it again when `onMessage` rejects. Resolves once connected; a
   * lost connection is retried with backoff.
   *
   * Button presses go to `onChoice` the same way (stored, then confirmed); without it they
   * are dropped. Each press must then be answered with {@link acknowledgeChoice}.
   */
  start(
    onMessage: (message: IncomingChatMessage) => Promise<void>,
    onChoice?: (press: IncomingChoice) => Promise<void>,
  ): Promise<void>;
  /** Stops receiving first (Telegram commits its update offset), then disconnects. */
  stop(): Promise<void>;
  /**
   * Sends a new message to a chat. `key` (at most 25 characters) names this message: the
   * same reply, part and text give the same key. A platform that takes an idempotency key
   * (Discord: `nonce` with `enforce_nonce`, kept a few minutes) answers a repeated send
   * with the message the first one created; Telegram has none and ignores it.
   */
  send(chatId: string, text: string, format: TextFormat, key?: string): Promise<SentChatMessage>;
  /**
   * Sends a new message with one row of buttons, one per choice (at most
   * {@link MAX_CHOICES}); `key` as in {@link send}. A press reaches `start()`'s `onChoice`.
   * Choices the platforms would refuse (none, too many, an id empty or longer than
   * {@link MAX_CHOICE_ID_BYTES} bytes, two alike) throw a {@link ChatPlatformError} that
   * is not retryable, before anything is sent.
   */
  sendChoices(
    chatId: string,
    text: string,
    format: TextFormat,
    choices: readonly Choice[],
    key?: string,
  ): Promise<SentChatMessage>;
  /**
   * Answers a press, so the person's app stops waiting: with `notice`, a short text shown
   * to them alone (Telegram a toast, Discord an ephemeral message); without, silently. A
   * press can be answered once, soon (Discord 3 s, Telegram 15 s): a second answer, a
   * late one or an unknown press throws a {@link ChatPlatformError} that is not retryable.
   */
  acknowledgeChoice(press: IncomingChoice, notice?: string): Promise<void>;
  /**
   * Replaces the text of a message the bot sent, and removes its buttons if it had any
   * (an answered question keeps no buttons). "Not modified" counts as success.
   */
  edit(chatId: string, messageId: string, text: string, format: TextFormat): Promise<void>;
  /** Shows the typing indicator for a few seconds. */
  typing(chatId: string): Promise<void>;
  /**
   * Sends a file as a new message (multipart upload); `key` as in {@link send}. An empty
   * file, or one over the platform's limit ({@link CHAT_PLATFORMS}' `maxFileBytes`), throws
   * a {@link ChatPlatformError} that is not retryable, before anything is sent.
   */
  sendFile(chatId: string, file: OutgoingFile, key?: string): Promise<SentChatMessage>;
  /**
   * The bytes of a file a person sent, whole or as they arrive (see {@link FileDownload}).
   * A file the platform will not hand over (Telegram's bots download at most 20 MB) throws
   * a {@link ChatPlatformError} that is not retryable and says why; so does, or a
   * retryable one, a download cut off part way.
   */
  download(attachment: ChatAttachment, signal?: AbortSignal): Promise<FileDownload>;
}

// ---------------------------------------------------------------------------------------
/**
 * OutboxStore: every reply a chat platform must receive, stored before it is
 * sent, so a failed or interrupted delivery is retried (across restarts) without running
 * the model again.
 *
 * An entry's life:
 *   draft (a reply streaming; message ids recorded as parts appear)
 *     ─► pending (final text known) ─► delivered (the platform confirmed every part)
 *                     ▲      └─► failed (the platform refused it for good)
 *                     └── retry at next_attempt_at (429 retry_after, 5xx, network)
 *
 * Several processes may see one entry (PostgreSQL mode: the process that ran the job sends
 * it at once, the leader's retry loop finds it due). Each send first takes the entry's
 * delivery lease with {@link OutboxStore.claim}, one conditional UPDATE: whoever gets it
 * sends, the other leaves the entry alone. Marking the outcome releases the lease; a
 * process that dies mid-send leaves one that expires after {@link DELIVERY_LEASE_MS}.
 */

/**
 * How long a delivery lease holds an entry: longer than one attempt (a few API calls, and a
 * 429 wait before them), short enough that a crashed sender's entry is soon retried.
 */
export const DELIVERY_LEASE_MS = 120_000;

/** One reply in the outbox. Times are epoch milliseconds. */
export interface OutboxEntry {
  id: number;
  /**
   * One entry per key: `job:<job id>`, `post:<job id>:<hash>`, `bus:<platform>:<message id>`…
   * (every form is built and read in `src/base/outbox-key.ts`).
   */
  dedupeKey: string;
  platform: ChatPlatformKind;
  chatId: string;
  state: "draft" | "pending" | "delivered" | "failed";
  /** The final text; null while a draft. */
  text: string | null;
  /** Platform messages already showing parts of this reply, in order. */
  messageIds: string[];
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** Where an entry goes and what identifies it. */
export interface OutboxAddress {
  dedupeKey: string;
  platform: ChatPlatformKind;
  chatId: string;
}

/** What `status` and `/healthz` show about the outbox. */
export interface OutboxSummary {
  /** Entries waiting for (another) delivery attempt. */
  pending: number;
  /** Entries the platform refused for good. */
  failed: number;
  /** Creation time of the oldest pending entry, or null. */
  oldestPendingAt: number | null;
}

/** Durable outbox of chat replies. */
export interface OutboxStore {
  /** The entry with this key, or null. */
  get(dedupeKey: string): Promise<OutboxEntry | null>;
  /** Creates a draft for a streaming reply; returns the existing entry if the key has one. */
  openDraft(address: OutboxAddress, now: number): Promise<OutboxEntry>;
  /** Records the messages showing the entry so far. */
  setMessageIds(id: number, messageIds: string[], now: number): Promise<void>;
  /**
   * Sets the final text and makes the entry pending (due now), creating it if needed.
   * An entry already pending, delivered or failed is returned unchanged: a resumed job
   * never sends its reply twice.
   */
  submit(address: OutboxAddress, text: string, now: number): Promise<OutboxEntry>;
  /** Pending entries of a platform due at `now`, oldest first. */
  due(platform: ChatPlatformKind, now: number, limit: number): Promise<OutboxEntry[]>;
  /**
   * Takes the delivery lease of a pending, due entry for `holder` until `until`, and returns
   * the entry as stored now; null when it is not pending, not due, or another holder's
   * lease runs. A holder may take its own lease again (it restarted under the same id).
   */
  claim(id: number, holder: string, now: number, until: number): Promise<OutboxEntry | null>;
  /** The platform confirmed every part (releases the lease, as do the two below). */
  markDelivered(id: number, now: number): Promise<void>;
  /** A transient failure: counts the attempt and retries at `retryAt`. */
  markRetry(id: number, error: string, retryAt: number, now: number): Promise<void>;
  /** A permanent failure: the entry is kept, with the error, and not retried. */
  markFailed(id: number, error: string, now: number): Promise<void>;
  /** Counts for status and health. */
  summary(): Promise<OutboxSummary>;
  /**
   * Deletes up to `batch` delivered entries delivered before `cutoff` (epoch ms) and
   * returns how many; failed entries are kept for the owner to see. (Default batch:
   * {@link PRUNE_BATCH})
   */
  pruneDelivered(cutoff: number, batch?: number): Promise<number>;
  /**
   * The texts of the file entries (`file:` and `voice:` keys) still stored, in any state:
   * the stored copies they describe are still needed (src/chat/outbox-files.ts).
   */
  fileTexts(): Promise<string[]>;
}

// ---------------------------------------------------------------------------------------
/**
 * PairingStore: chat users the owner admits without editing picklebot.yaml.
 *
 * Glossary
 * - **Pairing code**: 8 characters handed to a user who is not allowed; valid for an hour,
 *   at most {@link MAX_PENDING_PER_PLATFORM} pending per platform.
 * - **Replacement**: a new request on a full platform drops the oldest pending one, so a
 *   flood of throw-away accounts cannot hold every slot for an hour; the owner approves
 *   by the code the real person tells them, and is shown how many were replaced.
 * - **Paired user**: a user the owner approved with `picklebot pairing approve <code>`;
 *   admitted like one in `allowed_user_ids` until `pairing revoke`.
 * - **Refusal**: the reply that shows a user their id and code, at most once an hour each.
 */

/** How long a pairing code is valid. */
export const PAIRING_CODE_TTL_MS = 60 * 60 * 1000;
/** Codes pending at once on one platform; a newer request replaces the oldest. */
export const MAX_PENDING_PER_PLATFORM = 3;
/** How far back `pairing list` counts replaced requests (and how long they are kept). */
export const PAIRING_REPLACEMENT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A user who asked to be let in, and their code. Times are epoch milliseconds. */
export interface PairingRequest {
  code: string;
  platform: ChatPlatformKind;
  userId: string;
  userName: string;
  chatId: string;
  createdAt: number;
  expiresAt: number;
}

/** A user the owner approved. */
export interface PairedUser {
  platform: ChatPlatformKind;
  userId: string;
  userName: string;
  approvedAt: number;
}

/** Who asks for a code. */
export type PairingApplicant = Pick<PairingRequest, "platform" | "userId" | "userName" | "chatId">;

/** How many pending requests of a platform newer ones replaced (see the glossary). */
export interface PairingReplacements {
  platform: ChatPlatformKind;
  count: number;
}

/** Durable pairing requests and approvals. */
export interface PairingStore {
  /** Whether the owner approved this user. */
  isApproved(platform: ChatPlatformKind, userId: string): Promise<boolean>;
  /**
   * The user's code: their valid one, or a new one. When {@link MAX_PENDING_PER_PLATFORM}
   * are already pending on the platform, the oldest is dropped (its code stops working)
   * and recorded as replaced.
   */
  requestCode(applicant: PairingApplicant, now: number): Promise<PairingRequest>;
  /** Drops every pending code (`picklebot pairing clear`); returns how many there were. */
  clear(): Promise<number>;
  /** Requests replaced at or after `since`, per platform that had any. */
  replacedSince(since: number): Promise<PairingReplacements[]>;
  /** Records a refusal at `now`; false (nothing changed) when the user had one within the hour. */
  noteRefusal(platform: ChatPlatformKind, userId: string, now: number): Promise<boolean>;
  /** Codes still valid, oldest first. */
  pending(now: number): Promise<PairingRequest[]>;
  /** Approved users, oldest first. */
  approved(): Promise<PairedUser[]>;
  /**
   * Approves the user of a valid code (case-insensitive), and says which chat asked for it
   * (where to tell them); null when no such code is valid.
   */
  approve(code: string, now: number): Promise<(PairedUser & { chatId: string }) | null>;
  /** Removes the approval of `userId` (on `platform`, or any); returns what was removed. */
  revoke(userId: string, platform?: ChatPlatformKind): Promise<PairedUser[]>;
}
