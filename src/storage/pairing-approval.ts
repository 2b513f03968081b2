/**
 * Approving a pairing code, as `picklebot pairing approve` and the dashboard's Pairing page
 * do it: the person is admitted, and told so in the chat they asked from, through the
 * outbox (a running server's delivery sends it; one that starts later sends it then).
 */
import { formatOutboxKey } from "../base/outbox-key.js";
import type { OutboxStore, PairedUser, PairingStore } from "../ports/index.js";

/** What a person is told once the owner approved them. */
export const WELCOME_TEXT = "You're in: the owner approved you. Write to me any time.";

/** Approves the user of `code` and queues the welcome; null when no such code is valid. */
export async function approvePairing(
  stores: { pairing: PairingStore; outbox: OutboxStore },
  code: string,
  now: number,
): Promise<PairedUser | null> {
  const approved = await stores.pairing.approve(code, now);
  if (!approved) return null;
  const { chatId, ...user } = approved;
  const dedupeKey = formatOutboxKey({
    kind: "paired",
    platform: user.platform,
    userId: user.userId,
    approvedAt: user.approvedAt,
  });
  await stores.outbox.submit({ dedupeKey, platform: user.platform, chatId }, WELCOME_TEXT, now);
  return user;
}
