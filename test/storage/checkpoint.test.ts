/** The checkpoint contract on every single-process storage combination (openStorage). */
import { openStorage } from "../../src/storage/index.js";
import { testConfig } from "../helpers/config.js";
import { makeWorkspace } from "../helpers/workspace.js";
import { type CheckpointFactory, checkpointContract } from "./checkpoint.contract.js";

const SEQUENTIAL =
  "history and queue are separate stores with no shared transaction: the message stays, " +
  "carrying the job id, and no later checkpoint appends it again";

function local(queue: "sqlite" | "memory", history: "sqlite" | "jsonl"): CheckpointFactory {
  return async (clock) => {
    const ws = makeWorkspace();
    const config = testConfig(ws.dir, { queue: { backend: queue }, history: { backend: history } });
    const storage = await openStorage(config, clock);
    return {
      storage,
      async cleanup() {
        await storage.close();
        ws.remove();
      },
    };
  };
}

checkpointContract("sqlite (queue and history in one database)", local("sqlite", "sqlite"));
checkpointContract("sqlite queue + jsonl history", local("sqlite", "jsonl"), {
  optOut: { lostLockLeavesNoMessage: SEQUENTIAL },
});
checkpointContract("memory queue + sqlite history", local("memory", "sqlite"), {
  optOut: { lostLockLeavesNoMessage: SEQUENTIAL },
});
checkpointContract("memory queue + jsonl history", local("memory", "jsonl"), {
  optOut: { lostLockLeavesNoMessage: SEQUENTIAL },
});
