/**
 * The Pairing section, as `picklebot pairing`: the pending codes, approving one by the code
 * the person tells you (typed, not clicked: a flood of strangers can hold pending slots,
 * the code is what proves who you admit), revoking an admitted user, dropping every
 * pending code.
 *
 *   GET  /          pending codes, replacements, approved users
 *   POST /approve   `code` ─► 303 with a notice, or 400 with the reason
 *   POST /revoke    `platform`, `user` ─► 303, or 404 when no such user is approved
 *   POST /clear     drops every pending code ─► 303
 */
import { Hono } from "hono";
import { isChatPlatform } from "../../base/chat-address.js";
import type { DashboardEnv, DashboardSection } from "../../http/env.js";
import {
  type ChatPlatformKind,
  type Clock,
  type OutboxStore,
  PAIRING_CODE_TTL_MS,
  PAIRING_REPLACEMENT_WINDOW_MS,
  type PairingStore,
} from "../../ports/index.js";
import { approvePairing } from "../../storage/pairing-approval.js";
import { PairingPage } from "./pairing-page.js";
import {
  formField,
  redirectWithNotice,
  refuseWritesWhenReadOnly,
  type SectionContext,
} from "./ui.js";

/** What the Pairing section reads and changes. */
export interface PairingSectionDeps {
  pairing: PairingStore;
  /** Where the welcome of an approved person waits for delivery. */
  outbox: OutboxStore;
  clock: Clock;
  /** Whether the user is also admitted by `<platform>.allowed_user_ids` in picklebot.yaml. */
  inAllowedUserIds: (platform: ChatPlatformKind, userId: string) => boolean;
  timezone: string;
}

const CODE_HOURS = PAIRING_CODE_TTL_MS / 3_600_000;

/** The Pairing section, mounted at `/pairing`. */
export function pairingSection(deps: PairingSectionDeps): DashboardSection {
  const app = new Hono<DashboardEnv>();
  app.use("*", refuseWritesWhenReadOnly);
  app.get("/", (c) => renderPage(c, deps));
  app.post("/approve", async (c) => {
    const code = await formField(c, "code");
    if (code === "") {
      return renderPage(c, deps, 400, "Type the 8-character code the person was shown.");
    }
    const user = await approvePairing(deps, code, deps.clock.now());
    if (!user) {
      return renderPage(
        c,
        deps,
        400,
        `Pairing code "${code}" is not pending (codes are valid for ${CODE_HOURS} hour); ` +
          "check it with the person, or ask them to write to the bot again for a new code.",
      );
    }
    const notice = `Approved ${user.platform} user ${user.userId} (${user.userName}); they are told in their chat, and their next message runs.`;
    return redirectWithNotice(c, "", notice);
  });
  app.post("/revoke", async (c) => {
    const platform = await formField(c, "platform");
    const userId = await formField(c, "user");
    const removed = isChatPlatform(platform) ? await deps.pairing.revoke(userId, platform) : [];
    const gone = removed[0];
    if (!gone) {
      return renderPage(c, deps, 404, `No approved ${platform || "chat"} user "${userId}".`);
    }
    const stillAllowed = deps.inAllowedUserIds(gone.platform, gone.userId)
      ? ` They are also in ${gone.platform}.allowed_user_ids in picklebot.yaml: remove them there to shut them out.`
      : "";
    const notice = `Revoked ${gone.platform} user ${gone.userId} (${gone.userName}).${stillAllowed}`;
    return redirectWithNotice(c, "", notice);
  });
  app.post("/clear", async (c) => {
    const dropped = await deps.pairing.clear();
    const plural = dropped === 1 ? "" : "s";
    const notice = `Dropped ${dropped} pending code${plural}; whoever writes to the bot next gets a new one.`;
    return redirectWithNotice(c, "", notice);
  });
  return { path: "pairing", label: "Pairing", app };
}

async function renderPage(
  c: SectionContext,
  deps: PairingSectionDeps,
  status: 200 | 400 | 404 = 200,
  error?: string,
) {
  const now = deps.clock.now();
  const [pending, approved, replaced] = await Promise.all([
    deps.pairing.pending(now),
    deps.pairing.approved(),
    deps.pairing.replacedSince(now - PAIRING_REPLACEMENT_WINDOW_MS),
  ]);
  c.status(status);
  return c.render(
    <PairingPage
      c={c}
      pending={pending}
      approved={approved}
      replaced={replaced}
      timezone={deps.timezone}
      error={error}
    />,
    { title: "Pairing" },
  );
}
