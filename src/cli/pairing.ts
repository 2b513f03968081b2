/** `picklebot pairing`: admit chat users who asked with a pairing code, or remove them. */
import { Command } from "commander";
import { CHAT_PLATFORM_KINDS, isChatPlatform } from "../base/chat-address.js";
import { UserError } from "../base/errors.js";
import { allowedUserIds } from "../frontends/platforms.js";
import type { PairedUser, PairingRequest } from "../ports/index.js";
import { type WorkspaceContext, withWorkspace } from "./context.js";
import { formatTime, printJson, printLine, printTable } from "./output.js";

/** The `pairing` command group. */
export function pairingCommand(): Command {
  const pairing = new Command("pairing").description(
    "admit chat users who asked with a pairing code: pairing list | approve <code> | revoke <user>",
  );
  pairing
    .command("list")
    .description("pending pairing codes and approved users")
    .option("--json", "print JSON for scripts")
    .action((options: { json?: boolean }, command: Command) =>
      withWorkspace(command, async ({ storage }) => {
        const pending = await storage.pairing.pending(Date.now());
        const approved = await storage.pairing.approved();
        if (options.json) return printJson({ pending, approved });
        printPending(pending);
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
        const user = await storage.pairing.approve(code, Date.now());
        if (!user) {
          throw new UserError(
            `pairing code "${code}" is not pending (codes are valid for 1 hour); ` +
              "see the pending ones with picklebot pairing list, or ask the user to write to the bot again for a new code",
          );
        }
        printLine(
          `approved ${user.platform} user ${user.userId} (${user.userName}); their next message runs`,
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
