/**
 * Answering an approval request from outside a chat (`picklebot approvals allow|deny`, the
 * dashboard): decide it once in the store, wake its parked job, or say why it cannot be
 * answered. Chat buttons go through the {@link ApprovalDesk} instead.
 */
import { UserError } from "../base/errors.js";
import { normalizeCode } from "../base/short-code.js";
import type { ApprovalDecision, ApprovalRequest, ApprovalStore, JobQueue } from "../ports/index.js";

/** One answer, and how the reasons for refusing it are worded. */
export interface ApprovalAnswer {
  /** The id as typed (any case, spaces around it). */
  typedId: string;
  decision: ApprovalDecision;
  /** Stored as `answeredBy` (`cli`, `dashboard`). */
  answeredBy: string;
  now: number;
  /** How a refusal shows a time. */
  formatTime: (epochMs: number | null) => string;
  /** Where the pending requests are seen, ending a refusal ("see the pending ones with …"). */
  hint: string;
}

/**
 * Answers the request and wakes its job; returns it as answered. Throws a UserError (with
 * `context.approval`, and `context.state` when the request exists) when it is unknown,
 * already answered, or expired (which counts as Deny).
 */
export async function answerApproval(
  store: ApprovalStore,
  queue: Pick<JobQueue, "wake">,
  answer: ApprovalAnswer,
): Promise<ApprovalRequest> {
  const id = normalizeCode(answer.typedId);
  const answered = await store.answer(id, answer.decision, answer.answeredBy, answer.now);
  if (!answered) throw notAnswerable(answer, await store.expire(id, answer.now));
  await queue.wake(answered.jobId);
  return answered;
}

/** Why a request cannot be answered: unknown, already answered, or expired. */
function notAnswerable(answer: ApprovalAnswer, request: ApprovalRequest | null): UserError {
  const { typedId, formatTime, hint } = answer;
  if (!request) {
    return new UserError(`no approval request "${typedId}"; ${hint}`, {
      context: { approval: typedId },
    });
  }
  const context = { context: { approval: typedId, state: request.state } };
  if (request.state === "expired") {
    return new UserError(
      `approval request ${request.id} expired at ${formatTime(request.expiresAt)} and counted as deny; the agent may ask again (${hint})`,
      context,
    );
  }
  if (request.state === "pending") {
    return new UserError(
      `approval request ${request.id} could not be answered; try again`,
      context,
    );
  }
  const how = request.decision === "deny" ? "denied" : `allowed (${request.decision})`;
  return new UserError(
    `approval request ${request.id} was already ${how} by ${request.answeredBy} at ${formatTime(request.answeredAt)}; ${hint}`,
    context,
  );
}
