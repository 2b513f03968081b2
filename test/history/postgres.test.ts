import { describe } from "vitest";
import type { Clock } from "../../src/ports/index.js";
import { openPostgres } from "../../src/storage/postgres/database.js";
import { PostgresHistoryStore } from "../../src/storage/postgres/history.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { historyContract } from "./contract.js";

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("PostgresHistoryStore", () => {
  const database = useMigratedDatabase("history");

  historyContract("postgres", async (clock: Clock) => {
    await database().query("TRUNCATE sessions, messages, usage");
    let pool = await openPostgres({ url: database().url, poolSize: 2 });
    let store = new PostgresHistoryStore({ pool, clock });
    return {
      store,
      async reopen() {
        await store.close();
        await pool.end();
        pool = await openPostgres({ url: database().url, poolSize: 2 });
        store = new PostgresHistoryStore({ pool, clock });
        return store;
      },
      async cleanup() {
        await store.close();
        await pool.end();
      },
    };
  });
});
