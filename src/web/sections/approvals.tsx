/**
 * The Approvals section: tool calls waiting for the owner's consent, answered from the
 * browser as from a chat's buttons (Allow once / Always allow / Deny; the parked job wakes
 * at once), and the standing "always allow" grants, each revocable.
 *
 *   GET  /                 pending requests, then the grants
 *   POST /:id/answer       `decision` once | always | deny ─► 303; 404 unknown; 409 answered
 *                          or expired; 400 another decision
 *   POST /grants/revoke    `agent`, `tool`, `pattern` ─► 303; 404 when no such grant
 */
import { Hono } from "hono";
import { answerApproval } from "../../agents/approval-answers.js";
import { UserError } from "../../base/errors.js";
import type { DashboardEnv, DashboardSection } from "../../http/env.js";
import type { ApprovalDecision, ApprovalStore, Clock, JobQueue } from "../../ports/index.js";
import { ApprovalsPage } from "./approvals-page.js";
import {
  formatInZone,
  formField,
  redirectWithNotice,
  refuseWritesWhenReadOnly,
  type SectionContext,
} from "./ui.js";

/** What the Approvals section reads and changes. */
export interface ApprovalsSectionDeps {
  approvals: ApprovalStore;
  /** Wakes the job of an answered request. */
  queue: Pick<JobQueue, "wake">;
  clock: Clock;
  timezone: string;
  /** Takes the workspace's secrets out of a call's input before it is shown. */
  redact: (text: string) => string;
}

/** Who answers from the browser, as stored in `answeredBy` and `grantedBy`. */
const DASHBOARD_ANSWERER = "dashboard";

const DECISIONS: readonly ApprovalDecision[] = ["once", "always", "deny"];

/** The Approvals section, mounted at `/approvals`. */
export function approvalsSection(deps: ApprovalsSectionDeps): DashboardSection {
  const app = new Hono<DashboardEnv>();
  app.use("*", refuseWritesWhenReadOnly);
  app.get("/", (c) => renderPage(c, deps));
  app.post("/:id/answer", async (c) => {
    const decision = await formField(c, "decision");
    if (!isDecision(decision)) {
      const message = `"${decision}" is not an answer; choose Allow once, Always allow or Deny.`;
      return renderPage(c, deps, 400, message);
    }
    try {
      const answered = await answerApproval(deps.approvals, deps.queue, {
        typedId: c.req.param("id"),
        decision,
        answeredBy: DASHBOARD_ANSWERER,
        now: deps.clock.now(),
        formatTime: (at) => formatInZone(at, deps.timezone),
        hint: "the pending ones are listed here",
      });
      return redirectWithNotice(c, "", outcome(decision, answered));
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      return renderPage(c, deps, error.context.state ? 409 : 404, error.message);
    }
  });
  app.post("/grants/revoke", async (c) => {
    const [agent, tool, pattern] = await Promise.all(
      ["agent", "tool", "pattern"].map((name) => formField(c, name)),
    );
    const removed = await deps.approvals.revoke(agent ?? "", tool ?? "", pattern ?? "");
    if (removed.length === 0) {
      const message = `No always-allow grant of ${tool} under ${pattern} for agent "${agent}".`;
      return renderPage(c, deps, 404, message);
    }
    return redirectWithNotice(
      c,
      "",
      `Revoked: ${agent} asks again before ${tool} under ${pattern}.`,
    );
  });
  return { path: "approvals", label: "Approvals", app };
}

function isDecision(text: string): text is ApprovalDecision {
  return (DECISIONS as readonly string[]).includes(text);
}

function outcome(
  decision: ApprovalDecision,
  answered: { tool: string; agentId: string; jobId: string; pattern: string },
): string {
  const verb = decision === "deny" ? "Denied" : "Allowed";
  const always =
    decision === "always"
      ? ` ${answered.agentId} may now run ${answered.tool} under ${answered.pattern} without asking.`
      : "";
  return `${verb} ${answered.tool} for ${answered.agentId} (job ${answered.jobId}).${always}`;
}

async function renderPage(
  c: SectionContext,
  deps: ApprovalsSectionDeps,
  status: 200 | 400 | 404 | 409 = 200,
  error?: string,
) {
  const [pending, grants] = await Promise.all([deps.approvals.pending(), deps.approvals.grants()]);
  c.status(status);
  return c.render(
    <ApprovalsPage
      c={c}
      pending={pending.map((request) => ({ ...request, input: deps.redact(request.input) }))}
      grants={grants}
      now={deps.clock.now()}
      timezone={deps.timezone}
      error={error}
    />,
    { title: "Approvals" },
  );
}
