/**
 * The credentials of picklebot.yaml that a service can refuse (the model API key, the bot
 * tokens), and what the owner does then: the one source of the words that `picklebot
 * doctor`, the server's log, `/healthz`, the dashboard and `picklebot status` all say.
 */
import type { ChatPlatformKind } from "../ports/index.js";
import type { ModelProviderKind } from "./schema.js";

/** A service that takes a credential, as picklebot names it to the owner. */
export interface CredentialService {
  /** The service, as in "Telegram refused the bot token". */
  name: string;
  /** The credential it takes, as in "refused the bot token". */
  credential: string;
  /** What the owner does when the service refuses it. */
  fix: string;
}

/** Every service with a credential: one entry per model provider and chat platform. */
export const CREDENTIAL_SERVICES = {
  anthropic: {
    name: "the Anthropic API",
    credential: "the API key",
    fix: "create a key at https://console.anthropic.com/settings/keys and put it in ANTHROPIC_API_KEY (workspace .env)",
  },
  "openai-compatible": {
    name: "the model endpoint",
    credential: "the API key",
    fix: "check llm.api_key in picklebot.yaml: it must be a key of the endpoint llm.base_url names (docs/guides/models.md)",
  },
  telegram: {
    name: "Telegram",
    credential: "the bot token",
    fix: "the token is wrong or was revoked: ask @BotFather for the bot's token and put it in TELEGRAM_BOT_TOKEN",
  },
  discord: {
    name: "Discord",
    credential: "the bot token",
    fix: "the token is wrong or was reset: copy the bot's token from the Discord developer portal (Bot tab) into DISCORD_BOT_TOKEN",
  },
  slack: {
    name: "Slack",
    credential: "a token",
    fix: "the bot token (xoxb-) or the app-level token (xapp-) is wrong or was revoked: copy the Bot User OAuth Token (OAuth & Permissions) into SLACK_BOT_TOKEN and an app-level token with connections:write (Basic Information → App-Level Tokens) into SLACK_APP_TOKEN",
  },
} satisfies Record<ModelProviderKind | ChatPlatformKind, CredentialService>;

/** A service of {@link CREDENTIAL_SERVICES}. */
export type CredentialServiceKind = keyof typeof CREDENTIAL_SERVICES;

/**
 * What the service refused and what to do, in one sentence: `why` is the service's own
 * answer ("401 Unauthorized", "gateway close 4004").
 * Example: "Telegram refused the bot token (401 Unauthorized); the token is wrong or …".
 */
export function credentialRefused(kind: CredentialServiceKind, why: string): string {
  const { name, credential, fix } = CREDENTIAL_SERVICES[kind];
  return `${capitalised(name)} refused ${credential} (${why}); ${fix}`;
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
