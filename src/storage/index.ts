/**
 * Opens the storage a workspace's config selects. Each backend is one driver folder that
 * implements every store and the checkpoint spanning them (River's driver per backend):
 *
 * - `sqlite/`: the default; every store in one database file, `history/picklebot.db`, so
 *   the checkpoint is one transaction. The queue may be `memory/` and the history
 *   `jsonl/` instead; the checkpoint then runs its two steps in sequence.
 * - `postgres/`: distributed mode; every store and the cluster tables in the database of
 *   `queue.url`, through one pool.
 */
import { hostname } from "node:os";
import type { Config } from "../config/index.js";
import type { Clock, Storage } from "../ports/index.js";
import { openSqliteStorage } from "./sqlite/index.js";

export { DATABASE_FILE } from "./sqlite/index.js";

/**
 * The default instance id of distributed mode: the host name, with other characters made
 * `-`. (Here, not in postgres/: a single server names itself too, without loading pg.)
 */
export function defaultInstanceId(host = hostname()): string {
  const id = host.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 64);
  return id === "" ? "picklebot" : id;
}

/** Opens a workspace's storage as its config says. */
export async function openStorage(config: Config, clock: Clock): Promise<Storage> {
  if (config.queue.backend === "postgres" || config.history.backend === "postgres") {
    // Imported only here: pg is not needed (nor loaded) by a single server, which keeps
    // its start-up, and so the recovery of its orphaned jobs, fast.
    const { openPostgresStorage } = await import("./postgres/index.js");
    return openPostgresStorage(config, clock);
  }
  return openSqliteStorage(config, clock);
}
