/** `picklebot pairing`: admit chat users who asked with a pairing code, or remove them. */
import { Command } from "commander";
import { CHAT_PLATFORM_KINDS, isChatPlatform } from "../base/chat-address.js";
import { UserError } from "../base/errors.js";
import { allowedUserIds } from "../config/index.js";
import {
  MAX_PENDING_PER_PLATFORM,
  PAIRING_REPLACEMENT_WINDOW_MS,
  type PairedUser,
  type PairingReplacements,
  type PairingRequest,
} from "../ports/index.js";
import { approvePairing } from "../storage/pairing-approval.js";
import { type WorkspaceContext, withWorkspace } from "./context.js";
import { formatTime, printJson, printLine, printTable } from "./output.js";

/** The `pairing` command group. */
export function pairingCommand(): Command {
  const pairing = new Command("pairing").description(
    "admit chat users who asked with a pairing code: pairing list | approve <code> | revoke <user> | clear",
  );
  pairing
    .command("list")
    .description("pending pairing codes and approved users")
    .option("--json", "print JSON for scripts")
    .action((options: { json?: boolean }, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const now = Date.now();
        const pending = await storage.pairing.pending(now);
        const approved = await storage.pairing.approved();
        const replaced = await storage.pairing.replacedSince(now - PAIRING_REPLACEMENT_WINDOW_MS);
        if (options.json) return printJson({ pending, approved, replaced });
        printPending(pending);
        printReplaced(replaced);
        printLine("");
        printApproved(approved);
      }),
    );
  pairing
    .command("approve")
    .description("admit the user who was given this code (valid for 1 hour)")
    .argument("<code>", "the 8-character code the user was shown")
    .action((code: string, _options: unknown, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const user = await approvePairing(storage, code, Date.now());
        if (!user) {
          throw new UserError(
            `pairing code "${code}" is not pending (codes are valid for 1 hour); ` +
              "see the pending ones with picklebot pairing list, or ask the user to write to the bot again for a new code",
          );
        }
        printLine(
          `approved ${user.platform} user ${user.userId} (${user.userName}); they are told in their chat, and their next message runs`,
        );
      }),
    );
  pairing
    .command("clear")
    .description("drop every pending pairing code (approved users stay)")
    .action((_options: unknown, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const dropped = await storage.pairing.clear();
        printLine(
          `dropped ${dropped} pending pairing code${dropped === 1 ? "" : "s"}; ` +
            "whoever writes to the bot next gets a new one",
        );
      }),
    );
  pairing
    .command("revoke")
    .description("remove an approved user (USER is a user id, or telegram:<id> / discord:<id>)")
    .argument("<user>", "user id, optionally prefixed with the platform")
    .action((user: string, _options: unknown, command: Command) =>
      withWorkspace(command, (context) => revoke(context, user)),
    );
  return pairing;
}

async function revoke({ storage, config }: WorkspaceContext, user: string): Promise<void> {
  const [prefix, rest] = user.includes(":") ? user.split(":", 2) : [undefined, user];
  const platform = isChatPlatform(prefix) ? prefix : undefined;
  if (prefix !== undefined && !platform) {
    throw new UserError(
      `"${user}" names no platform; write ${CHAT_PLATFORM_KINDS.map((kind) => `${kind}:<id>`).join(", ")} or just the user id`,
    );
  }
  const userId = (rest ?? "").trim();
  const removed = await storage.pairing.revoke(userId, platform);
  for (const gone of removed) {
    printLine(`revoked ${gone.platform} user ${gone.userId} (${gone.userName})`);
  }
  const inYaml = (platform ? [platform] : CHAT_PLATFORM_KINDS).filter((name) =>
    allowedUserIds(config, name).has(userId),
  );
  for (const name of inYaml) {
    printLine(
      `note: ${userId} is also in ${name}.allowed_user_ids in picklebot.yaml; remove it there to shut them out`,
    );
  }
  if (removed.length === 0 && inYaml.length === 0) {
    throw new UserError(
      `no approved user "${user}"; see the approved ones with picklebot pairing list`,
    );
  }
}

function printPending(pending: PairingRequest[]) {
  if (pending.length === 0) return void printLine("no pending pairing codes");
  printTable(
    ["code", "platform", "user", "name", "asked at", "expires at"],
    pending.map((request) => [
      request.code,
      request.platform,
      request.userId,
      request.userName,
      formatTime(request.createdAt),
      formatTime(request.expiresAt),
    ]),
  );
}

/** Tells the owner that newer requests pushed older ones out: perhaps a flood. */
function printReplaced(replaced: PairingReplacements[]) {
  for (const { platform, count } of replaced) {
    printLine(
      `${count} pending ${platform} request${count === 1 ? " was" : "s were"} replaced by newer ` +
        `ones in the last ${PAIRING_REPLACEMENT_WINDOW_MS / 3_600_000} h (at most ` +
        `${MAX_PENDING_PER_PLATFORM} are kept): if the person you expect is not listed, ask them ` +
        "to write to the bot again, or run picklebot pairing clear first",
    );
  }
}

function printApproved(approved: PairedUser[]) {
  if (approved.length === 0) return void printLine("no approved users (besides allowed_user_ids)");
  printTable(
    ["platform", "user", "name", "approved at"],
    approved.map((user) => [
      user.platform,
      user.userId,
      user.userName,
      formatTime(user.approvedAt),
    ]),
  );
}
