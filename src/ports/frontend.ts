/** The Frontend port: where a person sees an agent's work. */
import type { ReplyTarget } from "./queue.js";

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
  /**
   * Stops showing the reply without a final text: the job parked (a later run of it
   * continues this reply) or a tool discarded it.
   */
  close(): void;
}

/** What a frontend may know about the reply it opens. */
export interface ReplyContext {
  /**
   * The job the reply answers. A reply opened again for the same job (a retry, a resume
   * after a crash) continues the first one, and its final text is delivered once.
   */
  jobId?: string;
  /** The agent whose reply it is (a chat frontend speaks the replies of some agents). */
  agentId?: string;
  /**
   * The message the reply answers came as a voice note or an audio file (read from the
   * stored job, so a resumed job knows it too): an agent with `voice_replies: in_kind`
   * speaks its reply then. (Default: false)
   */
  cameAsVoice?: boolean;
}

/** When an agent's chat replies are also spoken (AGENT.md `voice_replies`, besides `off`). */
export const SPOKEN_REPLY_MODES = ["always", "in_kind"] as const;

/** `always`: every chat reply; `in_kind`: the replies to a voice note or an audio file. */
export type SpokenReplyMode = (typeof SPOKEN_REPLY_MODES)[number];

/** A place where a person reads an agent's replies. */
export interface Frontend {
  /** The {@link ReplyTarget} kind this frontend serves. */
  readonly kind: ReplyTarget["kind"];
  /** Starts showing a reply to `target`. */
  openReply(target: ReplyTarget, context?: ReplyContext): ReplyStream;
}
