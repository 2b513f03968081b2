/** The markup of the Pairing section. */

import { basePath } from "hono/route";
import { Notice } from "../../http/layout.js";
import {
  MAX_PENDING_PER_PLATFORM,
  type PairedUser,
  type PairingReplacements,
  type PairingRequest,
} from "../../ports/index.js";
import { ActionForm, type Column, ListTable, revokeColumn } from "../components.js";
import { formatInZone, noticeOf, type SectionContext } from "./ui.js";

/**
 * Pending requests with the approve form, then the approved users with Revoke. The codes
 * are not shown: the owner types the one the person tells them, which is what proves that
 * the request is that person's.
 */
export function PairingPage(props: {
  c: SectionContext;
  pending: PairingRequest[];
  approved: PairedUser[];
  replaced: PairingReplacements[];
  timezone: string;
  error: string | undefined;
}) {
  const { c, pending, approved, replaced, timezone } = props;
  const base = basePath(c);
  const pendingColumns: Column<PairingRequest>[] = [
    { label: "Platform", cell: (request) => request.platform },
    { label: "User", cell: (request) => request.userId },
    { label: "Name", cell: (request) => request.userName },
    { label: "Asked", cell: (request) => formatInZone(request.createdAt, timezone) },
    { label: "Expires", cell: (request) => formatInZone(request.expiresAt, timezone) },
  ];
  const approvedColumns: Column<PairedUser>[] = [
    { label: "Platform", cell: (user) => user.platform },
    { label: "User", cell: (user) => user.userId },
    { label: "Name", cell: (user) => user.userName },
    { label: "Approved", cell: (user) => formatInZone(user.approvedAt, timezone) },
    ...revokeColumn<PairedUser>(c, `${base}/revoke`, (user) => ({
      platform: user.platform,
      user: user.userId,
    })),
  ];
  return (
    <>
      <Notice text={props.error ?? noticeOf(c)} error={props.error !== undefined} />
      <section class="card">
        <h2>Pending requests</h2>
        <ListTable columns={pendingColumns} rows={pending} empty="No pending pairing codes." />
        {replaced.map(({ platform, count }) => (
          <p class="notice">
            {count} pending {platform} request{count === 1 ? " was" : "s were"} replaced by newer
            ones in the last 24 h (at most {MAX_PENDING_PER_PLATFORM} are kept): if the person you
            expect is not listed, ask them to write to the bot again.
          </p>
        ))}
        <ActionForm action={`${base}/approve`}>
          <label>
            Code the person was shown{" "}
            <input name="code" required autocomplete="off" maxlength={16} size={10} />
          </label>
          <button type="submit" class="primary">
            Approve
          </button>
        </ActionForm>
        {pending.length === 0 ? null : (
          <ActionForm action={`${base}/clear`}>
            <button type="submit" class="danger">
              Drop every pending code
            </button>
          </ActionForm>
        )}
      </section>
      <section class="card">
        <h2>Approved users</h2>
        <ListTable
          columns={approvedColumns}
          rows={approved}
          empty="No approved users (besides allowed_user_ids in picklebot.yaml)."
        />
      </section>
    </>
  );
}
