/**
 * ThreadParents: which channel a thread belongs to, from the gateway events that list,
 * create, move and delete threads, so `discord.channel_ids` admits mentions in the
 * threads of a listed channel.
 */
import type { GatewayDispatchPayload } from "discord-api-types/v10";
import { describe, expect, it } from "vitest";
import { ThreadParents } from "../../src/chat/discord/threads.js";

const GUILD = "100000000000000001";
const CHANNEL = "200000000000000001";
const OTHER_CHANNEL = "200000000000000002";

/** A public thread as the gateway describes it. */
function thread(id: string, parentId: string): Record<string, unknown> {
  return { id, type: 11, guild_id: GUILD, parent_id: parentId, name: `thread ${id}` };
}

/** A gateway dispatch; the payloads carry only the fields the tracker reads. */
function event(t: string, d: Record<string, unknown>): GatewayDispatchPayload {
  return { op: 0, s: 1, t, d } as unknown as GatewayDispatchPayload;
}

describe("ThreadParents", () => {
  it("knows the threads a guild arrives with and those listed later", () => {
    const parents = new ThreadParents();
    parents.observe(event("GUILD_CREATE", { id: GUILD, threads: [thread("301", CHANNEL)] }));
    parents.observe(
      event("THREAD_LIST_SYNC", { guild_id: GUILD, threads: [thread("302", OTHER_CHANNEL)] }),
    );

    expect(parents.parentOf("301")).toBe(CHANNEL);
    expect(parents.parentOf("302")).toBe(OTHER_CHANNEL);
    expect(parents.parentOf(CHANNEL)).toBeNull();
  });

  it("follows a thread created, moved and deleted", () => {
    const parents = new ThreadParents();
    parents.observe(event("THREAD_CREATE", thread("303", CHANNEL)));
    expect(parents.parentOf("303")).toBe(CHANNEL);

    parents.observe(event("THREAD_UPDATE", thread("303", OTHER_CHANNEL)));
    expect(parents.parentOf("303")).toBe(OTHER_CHANNEL);

    parents.observe(
      event("THREAD_DELETE", { id: "303", guild_id: GUILD, parent_id: OTHER_CHANNEL, type: 11 }),
    );
    expect(parents.parentOf("303")).toBeNull();
  });

  it("ignores every other event", () => {
    const parents = new ThreadParents();
    parents.observe(
      event("CHANNEL_CREATE", { id: "304", type: 0, guild_id: GUILD, parent_id: "500" }),
    );

    expect(parents.parentOf("304")).toBeNull();
  });
});
