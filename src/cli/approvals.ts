/**
 * `picklebot approvals`: answer tool calls waiting for the owner's consent from a shell
 * (a cron's job has no chat to press a button in), and manage the "always allow" grants.
 */
import { Command } from "commander";
import { answerApproval } from "../agents/approval-answers.js";
import { POLICY_TOOLS } from "../agents/approval-policy.js";
import { UserError } from "../base/errors.js";
import { didYouMean } from "../config/index.js";
import type { ApprovalDecision, ApprovalGrant, ApprovalRequest } from "../ports/index.js";
import { type WorkspaceContext, withWorkspace } from "./context.js";
import { formatDuration, formatTime, printJson, printLine, printTable } from "./output.js";

/** Who answers from the command line, as stored in `answeredBy` and `grantedBy`. */
const CLI_ANSWERER = "cli";

/** Characters of a call's input `approvals list` shows in its table. */
const LISTED_INPUT_CHARS = 60;

const LIST_HINT = "see the pending ones with picklebot approvals list";

/** The `approvals` command group. */
export function approvalsCommand(): Command {
  const approvals = new Command("approvals").description(
    "answer tool calls waiting for your consent: approvals list | allow <id> | deny <id> | revoke <agent> <tool>",
  );
  approvals
    .command("list")
    .description("pending approval requests, then the always-allow grants")
    .option("--json", "print JSON for scripts")
    .action((options: { json?: boolean }, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const pending = await storage.approvals.pending();
        const grants = await storage.approvals.grants();
        if (options.json) return printJson({ pending, grants });
        printPending(pending, Date.now());
        printLine("");
        printGrants(grants);
      }),
    );
  approvals
    .command("allow")
    .description("let the waiting tool call run; its job resumes at once")
    .argument("<id>", "the request's id, from approvals list or the chat message")
    .option("--always", "also allow this agent's later calls of the tool under the same pattern")
    .action((id: string, options: { always?: boolean }, command: Command) =>
      withWorkspace(command, (context) => answer(context, id, options.always ? "always" : "once")),
    );
  approvals
    .command("deny")
    .description("refuse the waiting tool call; its job resumes at once and is told")
    .argument("<id>", "the request's id, from approvals list or the chat message")
    .action((id: string, _options: unknown, command: Command) =>
      withWorkspace(command, (context) => answer(context, id, "deny")),
    );
  approvals
    .command("revoke")
    .description("remove always-allow grants of an agent's tool (one pattern, or all)")
    .argument("<agent>", "the agent id")
    .argument("<tool>", "the tool name (bash, write, …)")
    .argument("[pattern]", "the path glob or * of one grant (default: every grant of the tool)")
    .action((agent: string, tool: string, pattern: string | undefined, _o, command: Command) =>
      withWorkspace(command, (context) => revoke(context, agent, tool, pattern)),
    );
  return approvals;
}

async function answer(
  { storage }: WorkspaceContext,
  typedId: string,
  decision: ApprovalDecision,
): Promise<void> {
  const answered = await answerApproval(storage.approvals, storage.queue, {
    typedId,
    decision,
    answeredBy: CLI_ANSWERER,
    now: Date.now(),
    formatTime,
    hint: LIST_HINT,
  });
  const verb = decision === "deny" ? "denied" : "allowed";
  const always =
    decision === "always"
      ? `; ${answered.agentId} may now run ${answered.tool} under ${answered.pattern} without asking`
      : "";
  printLine(`${verb} ${answered.tool} for ${answered.agentId} (job ${answered.jobId})${always}`);
}

async function revoke(
  { storage }: WorkspaceContext,
  agent: string,
  tool: string,
  pattern: string | undefined,
): Promise<void> {
  if (!POLICY_TOOLS.names.includes(tool)) {
    const suggestion = didYouMean(tool, POLICY_TOOLS.names);
    throw new UserError(
      `unknown tool "${tool}"${suggestion ? `; ${suggestion}` : ""} (known: ${POLICY_TOOLS.names.join(", ")})`,
    );
  }
  const removed = await storage.approvals.revoke(agent, tool, pattern);
  if (removed.length === 0) {
    const which = pattern === undefined ? "" : ` under ${pattern}`;
    throw new UserError(
      `no always-allow grant of ${tool}${which} for agent "${agent}"; see the grants with picklebot approvals list`,
    );
  }
  for (const grant of removed) {
    printLine(`revoked: ${grant.agentId} ${grant.tool} ${grant.pattern}; it asks again`);
  }
}

function printPending(pending: ApprovalRequest[], now: number): void {
  if (pending.length === 0) return void printLine("no approval requests pending");
  printTable(
    ["id", "agent", "tool", "input", "age", "expires in"],
    pending.map((request) => [
      request.id,
      request.agentId,
      request.tool,
      shortLine(request.input),
      formatDuration(now - request.createdAt),
      request.expiresAt > now ? formatDuration(request.expiresAt - now) : "expired",
    ]),
  );
}

function printGrants(grants: ApprovalGrant[]): void {
  if (grants.length === 0) return void printLine("no always-allow grants");
  printTable(
    ["agent", "tool", "pattern", "granted at", "by"],
    grants.map((grant) => [
      grant.agentId,
      grant.tool,
      grant.pattern,
      formatTime(grant.grantedAt),
      grant.grantedBy,
    ]),
  );
}

function shortLine(text: string): string {
  const line = text.replace(/\s+/g, " ");
  return line.length > LISTED_INPUT_CHARS ? `${line.slice(0, LISTED_INPUT_CHARS - 1)}…` : line;
}
