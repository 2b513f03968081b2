/**
 * DiscordPlatform's buttons with the real @discordjs/ws and @discordjs/rest against the fake Discord:
 * choices sent as components, presses handed over, answered once, removed by an edit.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChatPlatformError } from "../../src/base/errors.js";
import { DiscordPlatform } from "../../src/chat/discord/platform.js";
import type { Choice, IncomingChoice } from "../../src/ports/index.js";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord.js";
import { waitFor } from "../helpers/wait.js";

const USER = "400000000000000001";
const CHOICES: Choice[] = [
  { id: "once", label: "Allow once", style: "primary" },
  { id: "always", label: "Always allow" },
  { id: "deny", label: "Deny", style: "danger" },
];

let fake: FakeDiscord;
let platform: DiscordPlatform;
let presses: IncomingChoice[];
let clock: number;

beforeEach(async () => {
  clock = 1_000_000;
  presses = [];
  fake = await startFakeDiscord({ now: () => clock });
  platform = new DiscordPlatform({ token: fake.token, apiBase: fake.restRoot });
  await platform.start(
    async () => {},
    async (press) => {
      presses.push(press);
    },
  );
});

afterEach(async () => {
  await platform.stop();
  await fake.close();
});

/** Sends the choices into `channelId`, presses `choiceId`, and waits for the handover. */
async function pressed(choiceId: string, channelId = fake.guildChannelId) {
  const { messageId } = await platform.sendChoices(channelId, "Run `ls`?", "markdown", CHOICES);
  const made = await fake.pressButton({ channelId, messageId, customId: choiceId, userId: USER });
  const press = await waitFor(() => presses.find((p) => p.pressId === made.id), "the press");
  return { messageId, press };
}

async function failure(call: Promise<unknown>): Promise<ChatPlatformError> {
  const error = await call.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ChatPlatformError)) throw new Error(`expected a ChatPlatformError`);
  return error;
}

describe("DiscordPlatform choices", () => {
  it("sends the choices as one row of styled buttons, and an edit removes them", async () => {
    const channel = fake.guildChannelId;
    const { messageId } = await platform.sendChoices(channel, "Run `ls`?", "markdown", CHOICES);
    expect(fake.componentsOf(channel, messageId)).toEqual([
      {
        type: 1,
        components: [
          { type: 2, style: 1, label: "Allow once", custom_id: "once" },
          { type: 2, style: 2, label: "Always allow", custom_id: "always" },
          { type: 2, style: 4, label: "Deny", custom_id: "deny" },
        ],
      },
    ]);
    await platform.edit(channel, messageId, "Run `ls`? Allowed once.", "markdown");
    expect(fake.componentsOf(channel, messageId)).toEqual([]);
    expect(fake.messages(channel)).toEqual(["Run `ls`? Allowed once."]);
  });

  it("acknowledges silently or with a notice only the presser sees", async () => {
    const silent = (await pressed("once")).press;
    const noticed = (await pressed("deny")).press;
    await platform.acknowledgeChoice(silent);
    await platform.acknowledgeChoice(noticed, "Denied");
    expect(fake.interactionResponses).toEqual([
      { interactionId: silent.pressId, type: 6, status: 204 },
      {
        interactionId: noticed.pressId,
        type: 4,
        data: { content: "Denied", flags: 64, allowed_mentions: { parse: [] } },
        status: 204,
      },
    ]);
  });

  it("refuses a second acknowledgement, and surfaces Discord's refusal of a late one", async () => {
    const { press } = await pressed("once");
    await platform.acknowledgeChoice(press);
    const again = await failure(platform.acknowledgeChoice(press));
    expect(again.retryable).toBe(false);
    expect(again.message).toContain("already acknowledged");

    const late = (await pressed("deny")).press;
    clock += 3001;
    const refused = await failure(platform.acknowledgeChoice(late));
    expect(refused.retryable).toBe(false);
    expect(refused.message).toContain("Unknown interaction (HTTP 404, code 10062)");
    expect(fake.interactionResponses.map((response) => response.status)).toEqual([204, 404]);
  });
});
