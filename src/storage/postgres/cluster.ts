/**
 * The cluster tables of PostgreSQL mode (migrations/postgres/004_cluster.sql): the row
 * each running process keeps fresh with its heartbeat, and the leader lease.
 *
 *   register ─► heartbeat every heartbeat_s ─► deregister (graceful stop, jobs finished)
 *   silent for its TTL ─► the leader deletes the row and requeues the process's running
 *   jobs in the same transaction (the claim already counted the attempt)
 *
 * Expiry is judged on the database's clock, so hosts with skewed clocks agree.
 */
import type pg from "pg";
import { UserError } from "../../base/errors.js";
import type {
  ClusterStore,
  InstanceInfo,
  InstanceRow,
  LeaseHolder,
  ReapResult,
} from "../../ports/index.js";
import { inTransaction, retryOnDisconnect } from "./database.js";
import { connectedInstanceId } from "./instance-roles.js";
import type { PostgresJobQueue } from "./queue.js";

interface InstanceRecord {
  id: string;
  hostname: string;
  pid: number;
  version: string;
  agents: string[];
  concurrency: number;
  ttl_ms: number;
  started_at: Date;
  heartbeat_at: Date;
}

/** An instance row whose heartbeat is older than its TTL. */
const EXPIRED = "instances.heartbeat_at < now() - instances.ttl_ms * interval '1 millisecond'";

const SQL = {
  byId: "SELECT * FROM instances WHERE id = $1",
  // $1 id … $7 ttl, $8 take over a row even though it has not expired.
  register: `INSERT INTO instances (id, hostname, pid, version, agents, concurrency, ttl_ms)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid,
      version = excluded.version, agents = excluded.agents, concurrency = excluded.concurrency,
      ttl_ms = excluded.ttl_ms, started_at = now(), heartbeat_at = now()
    WHERE ${EXPIRED} OR $8::boolean
    RETURNING id`,
  // Writes the row again when the leader removed it (this process stalled past its TTL,
  // or PostgreSQL emptied the UNLOGGED table in crash recovery).
  heartbeat: `INSERT INTO instances (id, hostname, pid, version, agents, concurrency, ttl_ms)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
    WHERE instances.pid = excluded.pid AND instances.hostname = excluded.hostname
    RETURNING id`,
  deregister: "DELETE FROM instances WHERE id = $1 AND pid = $2 AND hostname = $3",
  list: "SELECT * FROM instances ORDER BY id",
  reap: `DELETE FROM instances WHERE ${EXPIRED} RETURNING id`,
  // $1 epoch ms before which a claim by a process without a row counts as orphaned.
  orphans: `SELECT DISTINCT locked_by AS id FROM jobs
    WHERE state = 'running' AND locked_at < $1
      AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = jobs.locked_by)`,
  // $1 name, $2 holder, $3 ttl ms: taken when free or expired, renewed by its holder.
  acquire: `INSERT INTO leases (name, holder, expires_at)
    VALUES ($1, $2, now() + $3 * interval '1 millisecond')
    ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
      acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE now() END
    WHERE leases.expires_at < now() OR leases.holder = excluded.holder
    RETURNING holder`,
  release: "DELETE FROM leases WHERE name = $1 AND holder = $2",
  holder:
    "SELECT holder, acquired_at, expires_at FROM leases WHERE name = $1 AND expires_at >= now()",
} as const;

/** The name of the one lease the cluster elects its leader by. */
const LEADER_LEASE = "leader";

/** Options of {@link PostgresClusterStore}. */
export interface PostgresClusterStoreOptions {
  /** The pool from `openPostgres` (migrated); never closed here. */
  pool: pg.Pool;
  /** The queue on the same pool: requeues the jobs of dead instances. */
  queue: PostgresJobQueue;
  /** Whether a process id is alive on this host. (Default: `process.kill(pid, 0)`) */
  isAlive?: (pid: number) => boolean;
}

/** Instances and the leader lease in PostgreSQL. */
export class PostgresClusterStore implements ClusterStore {
  readonly #pool: pg.Pool;
  readonly #queue: PostgresJobQueue;
  readonly #isAlive: (pid: number) => boolean;

  constructor(options: PostgresClusterStoreOptions) {
    this.#pool = options.pool;
    this.#queue = options.queue;
    this.#isAlive = options.isAlive ?? processIsAlive;
  }

  /**
   * Writes this process's row. Throws UserError when a live process already uses the id;
   * takes the row over when it expired, or when its process is gone from this host.
   */
  async register(info: InstanceInfo): Promise<void> {
    await this.#checkRole(info.id);
    const existing = await this.#pool.query<InstanceRecord>(SQL.byId, [info.id]);
    const previous = existing.rows[0];
    const takeOver =
      previous !== undefined &&
      previous.hostname === info.hostname &&
      (previous.pid === info.pid || !this.#isAlive(previous.pid));
    const result = await this.#pool.query(SQL.register, [...instanceParams(info), takeOver]);
    if (result.rowCount === 1) return;
    const holder =
      previous ?? (await this.#pool.query<InstanceRecord>(SQL.byId, [info.id])).rows[0];
    throw new UserError(
      `instance id "${info.id}" is in use by pid ${holder?.pid ?? "?"} on ${holder?.hostname ?? "another host"}; give each picklebot server its own id with PICKLEBOT_INSTANCE_ID or cluster.instance_id in picklebot.yaml`,
    );
  }

  /**
   * A role made by `cluster add-instance` may run only its own instance: with another id
   * every claim would be refused by the row-level policies, so say so at start-up.
   */
  async #checkRole(id: string): Promise<void> {
    const own = await connectedInstanceId(this.#pool);
    if (own === null || own === id) return;
    throw new UserError(
      `instance id "${id}" does not match the database role, which belongs to instance "${own}"; set PICKLEBOT_INSTANCE_ID=${own} (or cluster.instance_id) or use that instance's own URL`,
    );
  }

  /** Refreshes this process's heartbeat; false when another process holds the id now. */
  async heartbeat(info: InstanceInfo): Promise<boolean> {
    const result = await retryOnDisconnect(() =>
      this.#pool.query(SQL.heartbeat, instanceParams(info)),
    );
    return result.rowCount === 1;
  }

  /** Removes this process's row (graceful stop, after its jobs finished). */
  async deregister(info: InstanceInfo): Promise<void> {
    await retryOnDisconnect(() =>
      this.#pool.query(SQL.deregister, [info.id, info.pid, info.hostname]),
    );
  }

  /** Every registered process. */
  async instances(): Promise<InstanceRow[]> {
    const result = await retryOnDisconnect(() => this.#pool.query<InstanceRecord>(SQL.list));
    return result.rows.map(toInstanceRow);
  }

  /**
   * Removes instances whose heartbeat expired and requeues their running jobs, in one
   * transaction; also requeues jobs of ids without a row claimed before `orphanedBefore`
   * (epoch ms: left by a process whose row vanished with the UNLOGGED table).
   */
  async reapExpired(orphanedBefore: number): Promise<ReapResult> {
    return inTransaction(this.#pool, async (client) => {
      const dead = (await client.query<{ id: string }>(SQL.reap)).rows.map((row) => row.id);
      const orphans = (await client.query<{ id: string }>(SQL.orphans, [orphanedBefore])).rows;
      const workers = [...new Set([...dead, ...orphans.map((row) => row.id)])];
      const jobs = await this.#queue.recoverOn(client, workers);
      return { instances: dead, jobs };
    });
  }

  /** Takes the leader lease for `holder`, or renews it; false while another holds it. */
  async acquireLeadership(holder: string, ttlMs: number): Promise<boolean> {
    const result = await this.#pool.query(SQL.acquire, [LEADER_LEASE, holder, ttlMs]);
    return result.rowCount === 1;
  }

  /** Gives the lease up, so that another process need not wait for it to expire. */
  async releaseLeadership(holder: string): Promise<void> {
    await retryOnDisconnect(() => this.#pool.query(SQL.release, [LEADER_LEASE, holder]));
  }

  /** The current leader, or null when the lease is free or expired. */
  async leader(): Promise<LeaseHolder | null> {
    const result = await retryOnDisconnect(() =>
      this.#pool.query<{ holder: string; acquired_at: Date; expires_at: Date }>(SQL.holder, [
        LEADER_LEASE,
      ]),
    );
    const row = result.rows[0];
    if (!row) return null;
    return {
      holder: row.holder,
      acquiredAt: row.acquired_at.getTime(),
      expiresAt: row.expires_at.getTime(),
    };
  }
}

function instanceParams(info: InstanceInfo): unknown[] {
  return [
    info.id,
    info.hostname,
    info.pid,
    info.version,
    info.agents,
    info.concurrency,
    Math.round(info.ttlMs),
  ];
}

function toInstanceRow(row: InstanceRecord): InstanceRow {
  return {
    id: row.id,
    hostname: row.hostname,
    pid: row.pid,
    version: row.version,
    agents: row.agents,
    concurrency: row.concurrency,
    ttlMs: row.ttl_ms,
    startedAt: row.started_at.getTime(),
    heartbeatAt: row.heartbeat_at.getTime(),
  };
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
