/**
 * The approval desk of the server: asks the owner about a tool call and takes the answer.
 *
 *   ask (a job's call the policy marks `ask`)
 *     ├─ an "always allow" covers it ─► run
 *     ├─ its request (one per job and call, stored) is allowed ─► run
 *     ├─ denied, or past its expiry (counts as Deny) ─► error result for the model
 *     └─ pending ─► the question goes to the job's chat once, with Allow once /
 *                   Always allow / Deny buttons (or, without a chat, to the log for
 *                   `picklebot approvals`) ─► the job parks until the answer or the expiry
 *   a button press ─► only an admitted user; answered once (a second press, or a press
 *                     after the CLI answered, is told so) ─► the job wakes ─► the message
 *                     is edited to show the outcome, its buttons gone
 *
 * A job that resumes after an answer from the CLI, or after the expiry, edits the message
 * itself; an edit that fails is logged, never the job's failure.
 */

import { chatAddressOf } from "../base/chat-address.js";
import { ParkRequest, ToolError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import type {
  ApprovalDecision,
  ApprovalRequest,
  ApprovalStore,
  ChatPlatform,
  ChatPlatformKind,
  Choice,
  Clock,
  IncomingChoice,
  JobAdmin,
  JobQueue,
  JobWait,
  ReplyTarget,
  ToolContext,
} from "../ports/index.js";
import type { ApprovalAsker, ApprovalQuestion } from "./approval-gate.js";
import { approvalIdFor } from "./approval-policy.js";
import type { RunRequest } from "./runner.js";

/** What an {@link ApprovalDesk} needs. */
export interface ApprovalDeskOptions {
  store: ApprovalStore;
  /** Wakes an answered job; finds the parent of a subagent job, whose chat it asks in. */
  queue: Pick<JobQueue, "wake"> & Pick<JobAdmin, "get">;
  /** The platform that sends to a chat of `kind` (none: the question goes to the log). */
  platform: (kind: ChatPlatformKind) => ChatPlatform | undefined;
  /** Whether the user may answer (`allowed_user_ids` or paired). */
  isOwner: (platform: ChatPlatformKind, userId: string) => Promise<boolean>;
  /** How long a question waits before it counts as Deny (`approvals.timeout_s`). */
  timeoutMs: number;
  clock: Clock;
  logger: Logger;
}

/** The three buttons' decisions, in their order. */
const DECISIONS: ReadonlyArray<{ decision: ApprovalDecision; label: string }> = [
  { decision: "once", label: "Allow once" },
  { decision: "always", label: "Always allow" },
  { decision: "deny", label: "Deny" },
];

const CHOICE_ID = /^approval:([^:]+):(once|always|deny)$/;

/** Asks the owner about tool calls and takes their answers. */
export class ApprovalDesk {
  readonly #options: ApprovalDeskOptions;

  constructor(options: ApprovalDeskOptions) {
    this.#options = options;
  }

  /** The asker of a job's turn (its questions go to its chat); none for a turn without a job. */
  asker({ jobId, replyTo }: Pick<RunRequest, "jobId" | "replyTo">): ApprovalAsker | undefined {
    if (!jobId || !replyTo) return undefined;
    return (question, context) => this.#ask(question, context, jobId, replyTo);
  }

  /** True when `wait` is an approval that is no longer pending (answered or gone). */
  async isSettled(wait: JobWait): Promise<boolean> {
    if (wait.kind !== "approval") return false;
    return (await this.#options.store.get(wait.approvalId))?.state !== "pending";
  }

  async #ask(
    question: ApprovalQuestion,
    context: ToolContext,
    jobId: string,
    replyTo: ReplyTarget,
  ): Promise<void> {
    const { store, clock, timeoutMs } = this.#options;
    if (await store.isGranted(question.agentId, question.tool, question.pattern)) return;
    const now = clock.now();
    const opened = await store.open({
      id: approvalIdFor(jobId, context.callId ?? "call"),
      jobId,
      agentId: question.agentId,
      tool: question.tool,
      input: JSON.stringify(question.input) ?? "null",
      pattern: question.pattern,
      replyTo: await this.#askingTarget(jobId, replyTo),
      createdAt: now,
      expiresAt: now + timeoutMs,
    });
    const request = (await store.expire(opened.id, now)) ?? opened;
    if (request.state === "pending") {
      if (request.messageId === null) await this.#post(request, question.summary);
      throw new ParkRequest({ kind: "approval", approvalId: request.id }, request.expiresAt);
    }
    await this.#showOutcome(request);
    if (request.state === "allowed") return;
    throw new ToolError(refusal(request, question.tool));
  }

  /**
   * Where a job's questions go: its reply target, or, for a subagent job (which replies
   * to nobody), the nearest ancestor's that is a chat.
   */
  async #askingTarget(jobId: string, replyTo: ReplyTarget): Promise<ReplyTarget> {
    let job = chatAddressOf(replyTo) ? null : await this.#options.queue.get(jobId);
    while (job?.parentId) {
      job = await this.#options.queue.get(job.parentId);
      if (job && chatAddressOf(job.replyTo)) return job.replyTo;
    }
    return replyTo;
  }

  /** Sends the question with its buttons to the job's chat, or, without one, logs it. */
  async #post(request: ApprovalRequest, summary: string): Promise<void> {
    const { store, logger, platform: platformOf } = this.#options;
    const chat = chatAddressOf(request.replyTo);
    const platform = chat ? platformOf(chat.platform) : undefined;
    if (!chat || !platform) {
      logger.warn(
        { approval: request.id, job: request.jobId, tool: request.tool, input: request.input },
        `approval needed: ${summary}; answer with picklebot approvals allow ${request.id} (or deny)`,
      );
      return;
    }
    const choices: Choice[] = DECISIONS.map(({ decision, label }) => ({
      id: `approval:${request.id}:${decision}`,
      label,
      style: decision === "deny" ? "danger" : decision === "once" ? "primary" : "secondary",
    }));
    const sent = await platform.sendChoices(
      chat.chatId,
      questionText(request, summary),
      "plain",
      choices,
      `approval:${request.id}`,
    );
    await store.setMessageId(request.id, sent.messageId);
  }

  /**
   * A button press of a chat: answers the request once, for an admitted user, wakes its
   * job and shows the outcome. Presses of other buttons are acknowledged and ignored.
   */
  async answerPress(press: IncomingChoice, platform: ChatPlatform): Promise<void> {
    const { store, clock, isOwner } = this.#options;
    const match = CHOICE_ID.exec(press.choiceId);
    if (!match) return this.#acknowledge(platform, press, "This button is no longer in use.");
    const [, id, decision] = match as unknown as [string, string, ApprovalDecision];
    if (!(await isOwner(press.platform, press.userId))) {
      return this.#acknowledge(platform, press, "Only the owner can answer this.");
    }
    const answeredBy = `${press.platform}:${press.userId} (${press.userName})`;
    const answered = await store.answer(id, decision, answeredBy, clock.now());
    if (!answered) {
      const request = await store.expire(id, clock.now());
      await this.#acknowledge(platform, press, alreadyDecided(request));
      if (request) await this.#showOutcome(request);
      return;
    }
    await this.#options.queue.wake(answered.jobId);
    this.#options.logger.info(
      { approval: id, job: answered.jobId, decision, by: answeredBy },
      "approval answered",
    );
    await this.#acknowledge(platform, press, outcomeLine(answered));
    await this.#showOutcome(answered);
  }

  async #acknowledge(platform: ChatPlatform, press: IncomingChoice, notice: string): Promise<void> {
    await platform.acknowledgeChoice(press, notice).catch((thrown: unknown) => {
      this.#options.logger.warn(
        { platform: press.platform, error: toError(thrown).message },
        "could not acknowledge a button press",
      );
    });
  }

  /** Edits the question's message to show how it ended (its buttons go with the edit). */
  async #showOutcome(request: ApprovalRequest): Promise<void> {
    const chat = chatAddressOf(request.replyTo);
    const platform = chat ? this.#options.platform(chat.platform) : undefined;
    if (!chat || !platform || request.messageId === null || request.state === "pending") return;
    const text = `${questionText(request, summaryOf(request))}\n\n${outcomeLine(request)}`;
    await platform.edit(chat.chatId, request.messageId, text, "plain").catch((thrown: unknown) => {
      this.#options.logger.warn(
        { approval: request.id, error: toError(thrown).message },
        "could not show the outcome of an approval",
      );
    });
  }
}

/** The question as the chat shows it. */
function questionText(request: ApprovalRequest, summary: string): string {
  const minutes = Math.max(1, Math.round((request.expiresAt - request.createdAt) / 60_000));
  return [
    `🔐 ${request.agentId} wants to run ${summary}`,
    `Input: ${request.input}`,
    `Allow it? No answer within ${minutes} min counts as Deny. (approval ${request.id})`,
  ].join("\n");
}

/** The call in one line, from a stored request. */
function summaryOf(request: ApprovalRequest): string {
  return request.pattern === "*" ? request.tool : `${request.tool} (${request.pattern})`;
}

/** How a decided request ended, in one line. */
function outcomeLine(request: ApprovalRequest): string {
  const by = request.answeredBy
    ? ` by ${request.answeredBy.replace(/^\w+:\d+ \((.*)\)$/, "$1")}`
    : "";
  if (request.state === "expired") return "⌛ No answer in time: denied.";
  if (request.decision === "always") return `✅ Always allowed${by}.`;
  if (request.decision === "once") return `✅ Allowed once${by}.`;
  return `⛔ Denied${by}.`;
}

/** What a press of an already decided (or unknown) request is told. */
function alreadyDecided(request: ApprovalRequest | null): string {
  if (!request) return "This request is no longer known.";
  if (request.state === "pending") return "This request could not be answered; try again.";
  return `Already decided: ${outcomeLine(request)}`;
}

/** The error result of a call the owner refused or did not answer. */
function refusal(request: ApprovalRequest, tool: string): string {
  if (request.state === "expired") {
    return `${tool}: the owner did not answer the approval request in time, which counts as Deny; do not try again unless asked`;
  }
  return `${tool}: the owner denied this call; do not try again unless asked`;
}
