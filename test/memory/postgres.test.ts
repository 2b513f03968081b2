import { describe } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { PostgresHistoryStore } from "../../src/storage/postgres/history.js";
import { PostgresMemoryStore, PostgresRecallStore } from "../../src/storage/postgres/memory.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { onTestDatabase } from "../helpers/stores.js";
import { memoryContract } from "./contract.js";

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("memory stores on PostgreSQL", () => {
  const database = useMigratedDatabase("memory");
  memoryContract("postgres", () =>
    onTestDatabase(
      database(),
      ["memories", "memory_changes", "person_links", "session_memory", "sessions", "messages"],
      (pool) => ({
        memory: new PostgresMemoryStore({ pool }),
        recall: new PostgresRecallStore({ pool }),
        history: new PostgresHistoryStore({ pool, clock: systemClock }),
      }),
    ),
  );
});
