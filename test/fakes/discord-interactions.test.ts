/**
 * The fake Discord's buttons and interactions, with the real discord.js client: what a
 * message keeps, what Discord refuses, and how a press arrives and is answered once.
 */
import { once } from "node:events";
import {
  type ButtonInteraction,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  type Interaction,
  Partials,
  REST,
  Routes,
} from "discord.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeDiscord, startFakeDiscord } from "./discord.js";

const DM_CHANNEL = "300";
const button = (customId: string, label = `Button ${customId}`) => ({
  type: 2,
  style: 1,
  label,
  custom_id: customId,
});
const row = (...buttons: object[]) => [{ type: 1, components: buttons }];

describe("fake Discord buttons and interactions with the real discord.js client", () => {
  let fake: FakeDiscord;
  let client: Client;
  let rest: REST;
  let clock: number;

  beforeEach(async () => {
    clock = 1_000_000;
    fake = await startFakeDiscord({ now: () => clock });
    client = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.DirectMessages],
      partials: [Partials.Channel],
      rest: { api: fake.restRoot },
    });
    rest = new REST({ api: fake.restRoot, retries: 0 }).setToken(fake.token);
    const ready = once(client, Events.ClientReady);
    await client.login(fake.token);
    await ready;
  });

  afterEach(async () => {
    await client.destroy();
    await fake.close();
  });

  /** Posts a bot message with `components` into the guild channel; returns its id. */
  async function post(components: object[]): Promise<string> {
    const body = { content: "Sure?", components };
    const created = await rest.post(Routes.channelMessages(fake.guildChannelId), { body });
    return (created as { id: string }).id;
  }

  /** The discord.js error a REST call rejects with. */
  async function refusal(call: Promise<unknown>): Promise<DiscordAPIError> {
    const error = await call.then(
      () => null,
      (thrown: unknown) => thrown,
    );
    if (!(error instanceof DiscordAPIError)) throw new Error(`expected a refusal, got ${error}`);
    return error;
  }

  /** Presses `customId` of a message in the guild channel; resolves with what discord.js made. */
  async function press(messageId: string, customId: string) {
    const received = once(client, Events.InteractionCreate) as Promise<[Interaction]>;
    const made = await fake.pressButton({
      channelId: fake.guildChannelId,
      messageId,
      customId,
      userId: "400",
    });
    const [interaction] = await received;
    return { made, interaction: interaction as ButtonInteraction };
  }

  /** Responds to an interaction over REST, as the adapter does (no bot token). */
  function respond(id: string, token: string, body: object = { type: 6 }): Promise<unknown> {
    return rest.post(Routes.interactionCallback(id, token), { body, auth: false });
  }

  it("keeps a message's buttons, and an edit with components: [] removes them", async () => {
    const messageId = await post(row(button("yes"), button("no")));
    expect(fake.componentsOf(fake.guildChannelId, messageId)).toEqual(
      row(button("yes"), button("no")),
    );
    const body = { content: "Done", components: [] };
    await rest.patch(Routes.channelMessage(fake.guildChannelId, messageId), { body });
    expect(fake.componentsOf(fake.guildChannelId, messageId)).toEqual([]);
    expect(fake.messages(fake.guildChannelId)).toEqual(["Done"]);
  });

  it("refuses a custom_id over 100 characters, 6 buttons in a row or no label with 50035", async () => {
    const sixButtons = row(...["a", "b", "c", "d", "e", "f"].map((id) => button(id)));
    const refused = [
      await refusal(post(row(button("x".repeat(101))))),
      await refusal(post(sixButtons)),
      await refusal(post(row({ ...button("nameless"), label: undefined }))),
      await refusal(post(row(button("same"), button("same")))),
    ];
    expect(refused.map((error) => [error.status, error.code])).toEqual([
      [400, 50035],
      [400, 50035],
      [400, 50035],
      [400, 50035],
    ]);
    expect(refused.map((error) => error.message.split("\n")[1])).toEqual([
      "components[0].components[0].custom_id[BASE_TYPE_BAD_LENGTH]: Must be between 1 and 100 in length.",
      "components[0].components[BASE_TYPE_BAD_LENGTH]: Must be between 1 and 5 in length.",
      "components[0].components[0].label[BASE_TYPE_REQUIRED]: This field is required",
      "components[0].components[1].custom_id[COMPONENT_CUSTOM_ID_DUPLICATED]: Component custom id cannot be duplicated",
    ]);
    expect(fake.messages(fake.guildChannelId)).toEqual([]);
  });

  it("delivers a press as a button interaction with the custom_id, message, user and channel", async () => {
    const messageId = await post(row(button("yes")));
    const { made, interaction } = await press(messageId, "yes");
    expect(interaction.isButton()).toBe(true);
    expect({
      id: interaction.id,
      token: interaction.token,
      customId: interaction.customId,
      messageId: interaction.message.id,
      userId: interaction.user.id,
      channelId: interaction.channelId,
      guildId: interaction.guildId,
    }).toEqual({
      ...made,
      customId: "yes",
      messageId,
      userId: "400",
      channelId: fake.guildChannelId,
      guildId: fake.guildId,
    });
    await expect(
      fake.pressButton({ channelId: fake.guildChannelId, messageId, customId: "no", userId: "4" }),
    ).rejects.toThrow(/shows no button "no"/);
  });

  it("delivers a press in a DM with the user, not a member", async () => {
    const body = { content: "Sure?", components: row(button("yes")) };
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: "400", content: "hi" });
    const { id } = (await rest.post(Routes.channelMessages(DM_CHANNEL), { body })) as {
      id: string;
    };
    const received = once(client, Events.InteractionCreate) as Promise<[ButtonInteraction]>;
    await fake.pressButton({
      channelId: DM_CHANNEL,
      messageId: id,
      customId: "yes",
      userId: "400",
    });
    const [interaction] = await received;
    expect([interaction.user.id, interaction.guildId, interaction.channelId]).toEqual([
      "400",
      null,
      DM_CHANNEL,
    ]);
  });

  it("takes one response; a second is 40060, a late or unknown one 10062, each recorded", async () => {
    const messageId = await post(row(button("yes")));
    const first = (await press(messageId, "yes")).made;
    await respond(first.id, first.token, { type: 4, data: { content: "Noted", flags: 64 } });
    const again = await refusal(respond(first.id, first.token));
    const unknown = await refusal(respond("1", "nope"));
    const late = (await press(messageId, "yes")).made;
    clock += 3001;
    const tooLate = await refusal(respond(late.id, late.token));

    expect([again, unknown, tooLate].map((error) => [error.status, error.code])).toEqual([
      [400, 40060],
      [404, 10062],
      [404, 10062],
    ]);
    expect(again.message).toBe("Interaction has already been acknowledged.");
    expect(tooLate.message).toBe("Unknown interaction");
    expect(fake.interactionResponses).toEqual([
      { interactionId: first.id, type: 4, data: { content: "Noted", flags: 64 }, status: 204 },
      { interactionId: first.id, type: 6, data: undefined, status: 400, code: 40060 },
      { interactionId: "1", type: 6, data: undefined, status: 404, code: 10062 },
      { interactionId: late.id, type: 6, data: undefined, status: 404, code: 10062 },
    ]);
  });
});
