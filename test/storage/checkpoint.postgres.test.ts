/** The checkpoint contract on PostgreSQL (queue and history in one database: one transaction). */
import { describe } from "vitest";
import { openPostgresStorage } from "../../src/storage/postgres/index.js";
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
});
