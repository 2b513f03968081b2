/**
 * Buttons on Discord: choices as message components, a button press (a MESSAGE_COMPONENT
 * interaction) as an {@link IncomingChoice}, and the interaction response that answers it.
 *
 * An interaction is answered with its token, which stands for the bot for 15 minutes:
 * it stays in {@link PressTokens}, inside the adapter, and never travels with the press.
 */
import {
  type APIMessageComponentInteraction,
  ButtonStyle,
  ComponentType,
  InteractionResponseType,
  MessageFlags,
} from "discord-api-types/v10";
import type { Choice, ChoiceStyle, IncomingChoice } from "../../ports/index.js";

/** Discord's button style for each choice style. */
const BUTTON_STYLES = {
  primary: ButtonStyle.Primary,
  secondary: ButtonStyle.Secondary,
  danger: ButtonStyle.Danger,
} as const satisfies Record<ChoiceStyle, ButtonStyle>;

/** How long Discord honours an interaction token. */
export const PRESS_TOKEN_TTL_MS = 15 * 60 * 1000;

/** The choices as one action row of buttons, `custom_id` = choice id. */
export function choiceComponents(choices: readonly Choice[]): object[] {
  const buttons = choices.map(({ id, label, style }) => ({
    type: ComponentType.Button,
    style: BUTTON_STYLES[style ?? "secondary"],
    label,
    custom_id: id,
  }));
  return [{ type: ComponentType.ActionRow, components: buttons }];
}

/** A button press as the core sees it. */
export function toIncomingChoice(interaction: APIMessageComponentInteraction): IncomingChoice {
  // In a guild the presser comes as a member, in a DM as a user.
  const user = interaction.member?.user ?? interaction.user;
  return {
    platform: "discord",
    chatId: interaction.channel.id,
    userId: user?.id ?? "",
    userName: user?.username ?? "",
    direct: interaction.guild_id === undefined,
    messageId: interaction.message.id,
    choiceId: interaction.data.custom_id,
    pressId: interaction.id,
  };
}

/**
 * The interaction response: without a notice DEFERRED_UPDATE_MESSAGE (the button stops
 * spinning, nothing changes); with one CHANNEL_MESSAGE_WITH_SOURCE, ephemeral, so only the
 * person who pressed sees it.
 */
export function acknowledgement(notice: string | undefined): object {
  if (notice === undefined) return { type: InteractionResponseType.DeferredMessageUpdate };
  return {
    type: InteractionResponseType.ChannelMessageWithSource,
    data: { content: notice, flags: MessageFlags.Ephemeral, allowed_mentions: { parse: [] } },
  };
}

/**
 * The tokens of presses not answered yet, by press id. A token is handed out once
 * ({@link take}) and forgotten after {@link PRESS_TOKEN_TTL_MS}, when Discord would refuse
 * it anyway.
 */
export class PressTokens {
  readonly #tokens = new Map<string, { token: string; at: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Keeps the token of a press that just arrived, and forgets expired ones. */
  keep(pressId: string, token: string): void {
    const now = this.#now();
    for (const [id, kept] of this.#tokens) {
      if (now - kept.at > PRESS_TOKEN_TTL_MS) this.#tokens.delete(id);
    }
    this.#tokens.set(pressId, { token, at: now });
  }

  /** The press's token, forgotten from now on; undefined when unknown, used or expired. */
  take(pressId: string): string | undefined {
    const kept = this.#tokens.get(pressId);
    this.#tokens.delete(pressId);
    if (!kept || this.#now() - kept.at > PRESS_TOKEN_TTL_MS) return undefined;
    return kept.token;
  }
}
