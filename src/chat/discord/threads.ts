/**
 * Which channel each thread the bot can see belongs to, kept from the gateway's guild and
 * thread events, so a mention inside a thread counts as one in its parent channel
 * (`discord.channel_ids`). A message names only its own channel, the thread.
 */
import {
  type APIChannel,
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
} from "discord-api-types/v10";

/** The parent channel of each known thread, by thread id. */
export class ThreadParents {
  readonly #parents = new Map<string, string>();

  /** Notes the threads a gateway event creates, lists, moves or deletes. */
  observe(event: GatewayDispatchPayload): void {
    switch (event.t) {
      case GatewayDispatchEvents.GuildCreate:
        if ("threads" in event.d) this.#keepAll(event.d.threads);
        break;
      case GatewayDispatchEvents.ThreadListSync:
        this.#keepAll(event.d.threads);
        break;
      case GatewayDispatchEvents.ThreadCreate:
      case GatewayDispatchEvents.ThreadUpdate:
        this.#keep(event.d);
        break;
      case GatewayDispatchEvents.ThreadDelete:
        this.#parents.delete(event.d.id);
        break;
      default:
        break;
    }
  }

  /** The channel the thread `channelId` belongs to; null when it is not a known thread. */
  parentOf(channelId: string): string | null {
    return this.#parents.get(channelId) ?? null;
  }

  #keepAll(threads: readonly APIChannel[]): void {
    for (const thread of threads) this.#keep(thread);
  }

  #keep(thread: APIChannel): void {
    if ("parent_id" in thread && typeof thread.parent_id === "string") {
      this.#parents.set(thread.id, thread.parent_id);
    }
  }
}
