import { describe } from "vitest";
import { PostgresScheduleStore } from "../../src/storage/postgres/schedules.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { onTestDatabase } from "../helpers/stores.js";
import { scheduleContract } from "./contract.js";

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("schedule store on PostgreSQL", () => {
  const database = useMigratedDatabase("schedules");
  scheduleContract("postgres", () =>
    onTestDatabase(database(), ["schedules"], (pool) => new PostgresScheduleStore({ pool })),
  );
});
