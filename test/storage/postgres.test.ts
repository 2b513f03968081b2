/**
 * PostgreSQL storage: the checkpoint contract (queue and history in one database: one
 * transaction), and openStorage choosing the PostgreSQL driver.
 */
import { describe, expect, it } from "vitest";
import { openStorage } from "../../src/storage/index.js";
import { openPostgresStorage } from "../../src/storage/postgres/index.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { makeWorkspace } from "../helpers/workspace.js";
import { checkpointContract } from "./checkpoint.contract.js";

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("PostgreSQL storage", () => {
  const database = useMigratedDatabase("checkpoint");

  checkpointContract("postgres", async (clock) => {
    const ws = makeWorkspace();
    const url = database().url;
    const config = testConfig(ws.dir, {
      queue: { backend: "postgres", url, pool_size: 2 },
      history: { backend: "postgres" },
    });
    const storage = await openPostgresStorage(config, clock);
    return {
      storage,
      async cleanup() {
        await storage.close();
        ws.remove();
      },
    };
  });

  it("is what openStorage opens for queue.backend postgres, with the cluster stores", async () => {
    const ws = makeWorkspace();
    const config = testConfig(ws.dir, {
      queue: { backend: "postgres", url: database().url, pool_size: 2 },
      history: { backend: "postgres" },
    });
    const storage = await openStorage(config, new TestClock());
    try {
      expect(storage.cluster).not.toBeNull();
      const job = await storage.queue.enqueue({
        agentId: "opened",
        sessionKey: "console:opened",
        message: "hi",
        mode: "chat",
        replyTo: { kind: "console" },
      });
      expect(await storage.queue.get(job.id)).toMatchObject({ state: "queued" });
    } finally {
      await storage.close();
      ws.remove();
    }
  });
});
