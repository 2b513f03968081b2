/** The markup of the Approvals section. */

import { basePath } from "hono/route";
import { Notice } from "../../http/layout.js";
import type { ApprovalGrant, ApprovalRequest } from "../../ports/index.js";
import { ActionForm, type Column, ListTable, revokeColumn } from "../components.js";
import { formatInZone, noticeOf, type SectionContext } from "./ui.js";

/** The buttons of a pending request, in the order a chat shows them. */
const BUTTONS = [
  { decision: "once", label: "Allow once", class: "primary" },
  { decision: "always", label: "Always allow", class: undefined },
  { decision: "deny", label: "Deny", class: "danger" },
] as const;

/** Pending requests as cards with their answers, then the grants with Revoke. */
export function ApprovalsPage(props: {
  c: SectionContext;
  pending: ApprovalRequest[];
  grants: ApprovalGrant[];
  now: number;
  timezone: string;
  error: string | undefined;
}) {
  const { c, pending, grants, now, timezone } = props;
  const base = basePath(c);
  const columns: Column<ApprovalGrant>[] = [
    { label: "Agent", cell: (grant) => grant.agentId },
    { label: "Tool", cell: (grant) => grant.tool },
    { label: "Pattern", cell: (grant) => <code>{grant.pattern}</code> },
    { label: "Granted", cell: (grant) => formatInZone(grant.grantedAt, timezone) },
    { label: "By", cell: (grant) => grant.grantedBy },
    ...revokeColumn<ApprovalGrant>(c, `${base}/grants/revoke`, (grant) => ({
      agent: grant.agentId,
      tool: grant.tool,
      pattern: grant.pattern,
    })),
  ];
  return (
    <>
      <Notice text={props.error ?? noticeOf(c)} error={props.error !== undefined} />
      <h2>Waiting for you</h2>
      {pending.length === 0 ? <p class="muted">No approval requests pending.</p> : null}
      {pending.map((request) => (
        <section class="card approval">
          <h3>
            {request.agentId} wants to run <code>{request.tool}</code>
          </h3>
          <pre>{request.input}</pre>
          <p>
            Request <code>{request.id}</code>, job {request.jobId}, rule {request.pattern}; asked{" "}
            {formatInZone(request.createdAt, timezone)};{" "}
            {request.expiresAt > now
              ? `counts as Deny after ${formatInZone(request.expiresAt, timezone)}`
              : "expired: counts as Deny"}
            .
          </p>
          <ActionForm action={`${base}/${request.id}/answer`}>
            {BUTTONS.map((button) => (
              <button type="submit" name="decision" value={button.decision} class={button.class}>
                {button.label}
              </button>
            ))}
          </ActionForm>
        </section>
      ))}
      <section class="card">
        <h2>Always allowed</h2>
        <ListTable columns={columns} rows={grants} empty="No always-allow grants." />
      </section>
    </>
  );
}
