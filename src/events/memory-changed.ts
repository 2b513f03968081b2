/**
 * `memory.changed` for the memory changes this process makes (the agent's `memory` tool,
 * the dashboard, `/forget`): the server's memory store, wrapped. A change another process
 * made (`picklebot memory edit` from a shell) has no event; `picklebot memory show
 * --history` lists every change.
 */
import type { EventSink, MemoryStore, Storage } from "../ports/index.js";

/** The same store, whose `update` also publishes `memory.changed` for a change it stored. */
export function announcingMemoryChanges(store: MemoryStore, events: EventSink): MemoryStore {
  const update: MemoryStore["update"] = async (target, origin, edit) => {
    const result = await store.update(target, origin, edit);
    if (result.status === "applied") {
      const { agentId, scope, action, by, jobId, sessionId, callId } = result.change;
      events.publish({
        type: "memory.changed",
        agentId,
        scope,
        action,
        by,
        jobId,
        sessionId,
        callId,
      });
    }
    return result;
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === "update") return update;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `storage` whose memory store announces its changes (the server's storage). */
export function withMemoryEvents(storage: Storage, events: EventSink): Storage {
  return { ...storage, memory: announcingMemoryChanges(storage.memory, events) };
}
