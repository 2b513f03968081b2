/** The markup of the Pairing section. */
import {
  MAX_PENDING_PER_PLATFORM,
  type PairedUser,
  type PairingReplacements,
  type PairingRequest,
} from "../../../ports/index.js";
import {
  ActionForm,
  formAccess,
  formatInZone,
  Notice,
  noticeOf,
  type SectionContext,
} from "./ui.js";

/** Pending codes with the approve form, then the approved users with Revoke. */
export function PairingPage(props: {
  c: SectionContext;
  pending: PairingRequest[];
  approved: PairedUser[];
  replaced: PairingReplacements[];
  timezone: string;
  error: string | undefined;
}) {
  const { c, pending, approved, replaced, timezone } = props;
  const access = formAccess(c);
  return (
    <>
      <Notice text={props.error ?? noticeOf(c)} error={props.error !== undefined} />
      <section class="card">
        <h2>Pending codes</h2>
        {pending.length === 0 ? (
          <p>No pending pairing codes.</p>
        ) : (
          <div class="scroll-x">
            <table class="list">
              <thead>
                <tr>
                  <th>Code</th>
                  <th>Platform</th>
                  <th>User</th>
                  <th>Name</th>
                  <th>Asked</th>
                  <th>Expires</th>
                </tr>
              </thead>
              <tbody>
                {pending.map((request) => (
                  <tr>
                    <td>
                      <code>{request.code}</code>
                    </td>
                    <td>{request.platform}</td>
                    <td>{request.userId}</td>
                    <td>{request.userName}</td>
                    <td>{formatInZone(request.createdAt, timezone)}</td>
                    <td>{formatInZone(request.expiresAt, timezone)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {replaced.map(({ platform, count }) => (
          <p class="notice">
            {count} pending {platform} request{count === 1 ? " was" : "s were"} replaced by newer
            ones in the last 24 h (at most {MAX_PENDING_PER_PLATFORM} are kept): if the person you
            expect is not listed, ask them to write to the bot again.
          </p>
        ))}
        <ActionForm access={access} action="/approve">
          <label>
            Code the person was shown{" "}
            <input name="code" required autocomplete="off" maxlength={16} size={10} />
          </label>
          <button type="submit" class="primary">
            Approve
          </button>
        </ActionForm>
        {pending.length === 0 ? null : (
          <ActionForm access={access} action="/clear">
            <button type="submit" class="danger">
              Drop every pending code
            </button>
          </ActionForm>
        )}
      </section>
      <section class="card">
        <h2>Approved users</h2>
        {approved.length === 0 ? (
          <p>No approved users (besides allowed_user_ids in picklebot.yaml).</p>
        ) : (
          <div class="scroll-x">
            <table class="list">
              <thead>
                <tr>
                  <th>Platform</th>
                  <th>User</th>
                  <th>Name</th>
                  <th>Approved</th>
                  {access.readOnly ? null : <th>Actions</th>}
                </tr>
              </thead>
              <tbody>
                {approved.map((user) => (
                  <tr>
                    <td>{user.platform}</td>
                    <td>{user.userId}</td>
                    <td>{user.userName}</td>
                    <td>{formatInZone(user.approvedAt, timezone)}</td>
                    {access.readOnly ? null : (
                      <td>
                        <ActionForm access={access} action="/revoke">
                          <input type="hidden" name="platform" value={user.platform} />
                          <input type="hidden" name="user" value={user.userId} />
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
