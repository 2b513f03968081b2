/**
 * ApprovalStore: tool calls waiting for the owner's consent, and the "always allow" grants
 * the owner gave.
 *
 * Glossary
 * - **Approval request**: one tool call an agent's policy says to ask about. Its job is
 *   parked (waiting for `{kind: "approval", approvalId}`) until the owner answers, from a
 *   chat button or `picklebot approvals allow|deny`, or until it expires (an hour by
 *   default, `approvals.timeout_s`), which counts as Deny.
 * - **Grant**: an "Always allow" answer, kept per agent, tool and pattern (the path glob
 *   that matched, or `*`); a later call under it runs without asking, until
 *   `picklebot approvals revoke`.
 *
 * A request's life: pending ─► allowed (once | always) | denied (deny) | expired.
 * Answering is one conditional UPDATE that applies only while the request is pending and
 * unexpired, so a button pressed twice, or a chat and the CLI answering at once, decide
 * it once.
 */
import type { ReplyTarget } from "./queue.js";

/** Characters of a call's input an approval request keeps for display. */
export const APPROVAL_INPUT_MAX_CHARS = 500;

/** Where a request stands. */
export type ApprovalState = "pending" | "allowed" | "denied" | "expired";

/** The owner's answer: run this call, run it and every later one like it, or refuse it. */
export type ApprovalDecision = "once" | "always" | "deny";

/** One tool call waiting for (or given) the owner's answer. Times are epoch milliseconds. */
export interface ApprovalRequest {
  /** Short and typeable (`picklebot approvals allow <id>`); the caller derives it from the call. */
  id: string;
  /** The parked job that made the call. */
  jobId: string;
  agentId: string;
  /** The tool's name (`bash`, `write`, …). */
  tool: string;
  /** JSON of the call's input, cut to {@link APPROVAL_INPUT_MAX_CHARS} for display. */
  input: string;
  /** The policy rule that asked: a path glob of a file tool, else `*`; a grant keeps it. */
  pattern: string;
  /** The job's reply target: where the question was shown. */
  replyTo: ReplyTarget;
  state: ApprovalState;
  /** Null until answered (an expired request has none either). */
  decision: ApprovalDecision | null;
  /** Who answered: `telegram:123 (Ana)`, `cli`; null until answered. */
  answeredBy: string | null;
  createdAt: number;
  /** After this, an answer is refused and the request counts as Deny. */
  expiresAt: number;
  /** When it was answered or marked expired. */
  answeredAt: number | null;
  /** The chat message showing the buttons, once sent. */
  messageId: string | null;
}

/** What {@link ApprovalStore.open} takes: a request before anyone answered it. */
export type NewApprovalRequest = Omit<
  ApprovalRequest,
  "state" | "decision" | "answeredBy" | "answeredAt" | "messageId"
>;

/** An "always allow": calls of `tool` by `agentId` under `pattern` run without asking. */
export interface ApprovalGrant {
  agentId: string;
  tool: string;
  pattern: string;
  grantedAt: number;
  /** Who answered "Always allow" (see {@link ApprovalRequest.answeredBy}). */
  grantedBy: string;
}

/** Durable approval requests and grants. */
export interface ApprovalStore {
  /**
   * Stores a pending request, its input cut to {@link APPROVAL_INPUT_MAX_CHARS}; when the
   * id is already stored (a resumed job asking again), returns that row unchanged.
   */
  open(request: NewApprovalRequest): Promise<ApprovalRequest>;
  /** The request with this id, or null. */
  get(id: string): Promise<ApprovalRequest | null>;
  /** Requests still pending (expired ones too, until marked), oldest first. */
  pending(): Promise<ApprovalRequest[]>;
  /** Records the chat message that shows the request's buttons. */
  setMessageId(id: string, messageId: string): Promise<void>;
  /**
   * Answers a request, once: applies only while it is pending and `now` is before its
   * expiry, and returns it as answered; null otherwise (unknown, answered, expired).
   * `always` also stores the grant of its agent, tool and pattern, in the same transaction.
   */
  answer(
    id: string,
    decision: ApprovalDecision,
    answeredBy: string,
    now: number,
  ): Promise<ApprovalRequest | null>;
  /**
   * Marks the request expired if it is pending and `now` is at or past its expiry; returns
   * it as it stands after (answered, expired or still pending), or null when unknown.
   */
  expire(id: string, now: number): Promise<ApprovalRequest | null>;
  /** Whether calls of `tool` by `agentId` under `pattern` have an "always allow". */
  isGranted(agentId: string, tool: string, pattern: string): Promise<boolean>;
  /** Every grant, oldest first. */
  grants(): Promise<ApprovalGrant[]>;
  /** Removes the agent's grants of `tool` (under `pattern`, or every one); returns them. */
  revoke(agentId: string, tool: string, pattern?: string): Promise<ApprovalGrant[]>;
}
