import type pg from "pg";
import { describe } from "vitest";
import { openPostgres } from "../../src/storage/postgres/database.js";
import { PostgresOutboxStore } from "../../src/storage/postgres/outbox.js";
import { PostgresPairingStore } from "../../src/storage/postgres/pairing.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { outboxContract, pairingContract, type StoreHandle } from "./contract.js";

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("chat bus stores on PostgreSQL", () => {
  const database = useMigratedDatabase("bus");

  /** A store on the emptied test database; `reopen` opens a new pool, like a restart. */
  async function onTestDatabase<Store>(
    build: (pool: pg.Pool) => Store,
  ): Promise<StoreHandle<Store>> {
    await database().query(
      "TRUNCATE outbox, pairing_requests, paired_users, pairing_refusals RESTART IDENTITY",
    );
    let pool = await openPostgres({ url: database().url, poolSize: 2 });
    return {
      store: build(pool),
      async reopen() {
        await pool.end();
        pool = await openPostgres({ url: database().url, poolSize: 2 });
        return build(pool);
      },
      async cleanup() {
        await pool.end();
      },
    };
  }

  outboxContract("postgres", () => onTestDatabase((pool) => new PostgresOutboxStore({ pool })));
  pairingContract("postgres", () => onTestDatabase((pool) => new PostgresPairingStore({ pool })));
});
