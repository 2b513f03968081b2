import { describe } from "vitest";
import { PostgresOutboxStore } from "../../src/storage/postgres/outbox.js";
import { PostgresPairingStore } from "../../src/storage/postgres/pairing.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { onTestDatabase } from "../helpers/stores.js";
import { outboxContract, pairingContract } from "./outbox-pairing.contract.js";

const skipReason = await postgresSkipReason();

const TABLES = [
  "outbox",
  "pairing_requests",
  "paired_users",
  "pairing_refusals",
  "pairing_replacements",
];

describe.skipIf(skipReason !== null)("chat bus stores on PostgreSQL", () => {
  const database = useMigratedDatabase("bus");
  outboxContract("postgres", () =>
    onTestDatabase(database(), TABLES, (pool) => new PostgresOutboxStore({ pool })),
  );
  pairingContract("postgres", () =>
    onTestDatabase(database(), TABLES, (pool) => new PostgresPairingStore({ pool })),
  );
});
