import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteOutboxStore } from "../../src/storage/sqlite/outbox.js";
import { SqlitePairingStore } from "../../src/storage/sqlite/pairing.js";
import { outboxContract, pairingContract, type StoreHandle } from "./contract.js";

/** A store on a temp database file; `reopen` opens a new connection, like a restart. */
async function onTempDatabase<Store>(
  build: (db: ReturnType<typeof openDatabase>) => Store,
): Promise<StoreHandle<Store>> {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-bus-sqlite-"));
  const path = join(dir, "picklebot.db");
  let db = openDatabase(path);
  return {
    store: build(db),
    async reopen() {
      db.close();
      db = openDatabase(path);
      return build(db);
    },
    async cleanup() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

outboxContract("sqlite", () => onTempDatabase((db) => new SqliteOutboxStore({ db })));
pairingContract("sqlite", () => onTempDatabase((db) => new SqlitePairingStore({ db })));
