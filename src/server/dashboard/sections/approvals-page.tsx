/** The markup of the Approvals section. */
import type { ApprovalGrant, ApprovalRequest } from "../../../ports/index.js";
import {
  ActionForm,
  formAccess,
  formatInZone,
  Notice,
  noticeOf,
  type SectionContext,
} from "./ui.js";

/** The buttons of a pending request, in the order a chat shows them. */
const BUTTONS = [
  { decision: "once", label: "Allow once", class: "primary" },
  { decision: "always", label: "Always allow", class: "" },
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
  const access = formAccess(c);
  return (
    <>
      <Notice text={props.error ?? noticeOf(c)} error={props.error !== undefined} />
      <h2>Waiting for you</h2>
      {pending.length === 0 ? <p>No approval requests pending.</p> : null}
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
          <ActionForm access={access} action={`/${request.id}/answer`}>
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
        {grants.length === 0 ? (
          <p>No always-allow grants.</p>
        ) : (
          <div class="scroll-x">
            <table class="list">
              <thead>
                <tr>
                  <th>Agent</th>
                  <th>Tool</th>
                  <th>Pattern</th>
                  <th>Granted</th>
                  <th>By</th>
                  {access.readOnly ? null : <th>Actions</th>}
                </tr>
              </thead>
              <tbody>
                {grants.map((grant) => (
                  <tr>
                    <td>{grant.agentId}</td>
                    <td>{grant.tool}</td>
                    <td>
                      <code>{grant.pattern}</code>
                    </td>
                    <td>{formatInZone(grant.grantedAt, timezone)}</td>
                    <td>{grant.grantedBy}</td>
                    {access.readOnly ? null : (
                      <td>
                        <ActionForm access={access} action="/grants/revoke">
                          <input type="hidden" name="agent" value={grant.agentId} />
                          <input type="hidden" name="tool" value={grant.tool} />
                          <input type="hidden" name="pattern" value={grant.pattern} />
                          <button type="submit" class="danger">
                            Revoke
                          </button>
                        </ActionForm>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
