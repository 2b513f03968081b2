/**
 * Per-instance roles (migration 009, `cluster add-instance`): two instance roles on the
 * local PostgreSQL; row-level security lets each change only the jobs it holds, whatever
 * lock token it presents. Roles are cluster-wide: each run names its own and drops them.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClaimedJob, NewJob } from "../../src/ports/index.js";
import { openPostgres } from "../../src/storage/postgres/database.js";
import {
  addInstanceRole,
  INSTANCE_GRANTS,
  listInstanceRoles,
  type NewInstanceRole,
  removeInstanceRole,
} from "../../src/storage/postgres/instance-roles.js";
import { PostgresJobQueue } from "../../src/storage/postgres/queue.js";
import {
  admin,
  createTestDatabase,
  postgresSkipReason,
  type TestDatabase,
} from "../helpers/postgres.js";

const skipReason = await postgresSkipReason();

/** One instance connected with its own role. */
interface Instance {
  role: NewInstanceRole;
  pool: pg.Pool;
  queue: PostgresJobQueue;
}

const JOB: NewJob = {
  agentId: "pickle",
  sessionKey: "console:roles",
  message: "hi",
  mode: "chat",
  replyTo: { kind: "silent" },
};

describe.skipIf(skipReason !== null)("per-instance PostgreSQL roles", () => {
  const suffix = randomBytes(3).toString("hex");
  const idA = `roles-a-${suffix}`;
  const idB = `roles-b-${suffix}`;
  let database: TestDatabase;
  let adminPool: pg.Pool;
  let adminQueue: PostgresJobQueue;
  let a: Instance;
  let b: Instance;

  async function connect(role: NewInstanceRole): Promise<Instance> {
    const pool = await openPostgres({ url: role.url, poolSize: 2 });
    return { role, pool, queue: new PostgresJobQueue({ pool }) };
  }

  beforeAll(async () => {
    database = await createTestDatabase("roles");
    adminPool = await openPostgres({ url: database.url, poolSize: 2 });
    adminQueue = new PostgresJobQueue({ pool: adminPool });
    a = await connect(await addInstanceRole(adminPool, database.url, idA));
    b = await connect(await addInstanceRole(adminPool, database.url, idB));
    for (const instance of [a, b]) await register(instance);
  });

  /** Writes the live instance row of `instance`, as its server would. */
  async function register(instance: Instance): Promise<void> {
    await instance.pool.query(
      "INSERT INTO instances (id, hostname, pid, version, agents, concurrency, ttl_ms) VALUES ($1, 'h', 1, 'v', '{}', 1, 60000)",
      [instance.role.instanceId],
    );
  }

  afterAll(async () => {
    for (const instance of [a, b]) {
      await instance?.queue.close();
      await instance?.pool.end();
    }
    await adminQueue?.close();
    await adminPool?.end();
    await database?.drop();
    await admin(async (client) => {
      for (const id of [idA, idB]) await client.query(`DROP ROLE IF EXISTS "picklebot_i_${id}"`);
    });
  });

  /** A job enqueued by the admin and claimed by `instance`. */
  async function claimedBy(instance: Instance, sessionKey: string): Promise<ClaimedJob> {
    await adminQueue.enqueue({ ...JOB, sessionKey });
    const [job] = await instance.queue.claim(instance.role.instanceId, 1);
    if (!job) throw new Error(`${instance.role.instanceId} claimed nothing`);
    expect(job.lockedBy).toBe(instance.role.instanceId);
    return job;
  }

  it("gives each role a URL that connects as that role, mapped to its instance", async () => {
    const url = new URL(a.role.url);
    expect(decodeURIComponent(url.username)).toBe(`picklebot_i_${idA}`);
    expect(url.password).not.toBe("");
    const { rows } = await a.pool.query(
      "SELECT current_user AS role, picklebot_instance_id() AS id",
    );
    expect(rows[0]).toEqual({ role: `picklebot_i_${idA}`, id: idA });
    expect((await listInstanceRoles(adminPool)).map((role) => role.instanceId)).toEqual(
      expect.arrayContaining([idA, idB]),
    );
  });

  it("refuses a second role for the same instance", async () => {
    await expect(addInstanceRole(adminPool, database.url, idA)).rejects.toThrow(
      /already has a role/,
    );
  });

  it("lets instance B neither complete, fail, retry, park nor checkpoint A's job, even with A's token; A can", async () => {
    const job = await claimedBy(a, "console:fenced");
    expect(await b.queue.complete(job)).toBe(false);
    expect(await b.queue.fail(job, "stolen", null)).toBe(false);
    expect(await b.queue.fail(job, "stolen", Date.now())).toBe(false);
    expect(await b.queue.checkpoint(job, "session-x")).toBe(false);
    expect(
      await b.queue.park(job, {
        wait: { kind: "children" } as never,
        until: Date.now(),
        toolResults: [],
      }),
    ).toBe(false);
    const raw = await b.pool.query(
      "UPDATE jobs SET state = 'done', locked_by = NULL WHERE id = $1",
      [job.id],
    );
    expect(raw.rowCount).toBe(0);
    expect(await b.queue.recoverOn(b.pool, [idA])).toBe(0);
    expect(await adminQueue.get(job.id)).toMatchObject({ state: "running", lockedBy: idA });
    expect(await a.queue.complete(job)).toBe(true);
    expect(await adminQueue.get(job.id)).toMatchObject({ state: "done" });
  });

  it("refuses a claim in another instance's name", async () => {
    await adminQueue.enqueue({ ...JOB, sessionKey: "console:forged" });
    await expect(b.queue.claim(idA, 1)).rejects.toThrow(/row-level security/);
    const [job] = await b.queue.claim(idB, 1);
    expect(job).toMatchObject({ lockedBy: idB });
    expect(await b.queue.complete(job as ClaimedJob)).toBe(true);
  });

  it("keeps the lock token as the second fence for the holder", async () => {
    const job = await claimedBy(a, "console:token");
    expect(await a.queue.complete({ ...job, lockToken: "forged" })).toBe(false);
    expect(await a.queue.complete(job)).toBe(true);
  });

  it("lets an instance requeue the jobs of an instance that is dead, not of one that is alive", async () => {
    const job = await claimedBy(a, "console:dead");
    await expect(
      b.pool.query("UPDATE instances SET heartbeat_at = now() - interval '1 hour' WHERE id = $1", [
        idA,
      ]),
    ).resolves.toMatchObject({ rowCount: 0 });
    expect((await b.pool.query("DELETE FROM instances WHERE id = $1", [idA])).rowCount).toBe(0);
    expect(await b.queue.recoverOn(b.pool, [idA])).toBe(0);
    // A stops sending heartbeats.
    await adminPool.query(
      "UPDATE instances SET heartbeat_at = now() - interval '1 hour' WHERE id = $1",
      [idA],
    );
    expect(await b.queue.recoverOn(b.pool, [idA])).toBe(1);
    expect(await adminQueue.get(job.id)).toMatchObject({ state: "queued", lockedBy: null });
    expect(await a.queue.complete(job)).toBe(false);
    expect((await b.pool.query("DELETE FROM instances WHERE id = $1", [idA])).rowCount).toBe(1);
    await register(a);
  });

  it("prunes only finished jobs", async () => {
    const queued = await adminQueue.enqueue({ ...JOB, sessionKey: "console:prune" });
    expect((await b.pool.query("DELETE FROM jobs WHERE id = $1", [queued.id])).rowCount).toBe(0);
    expect(await b.queue.prune(Date.now() + 60_000)).toBeGreaterThan(0);
    expect(await adminQueue.get(queued.id)).not.toBeNull();
  });

  it("has no DDL and no access to the role mapping", async () => {
    await expect(b.pool.query("CREATE TABLE sneaky (id int)")).rejects.toThrow(/permission denied/);
    await expect(b.pool.query("ALTER TABLE jobs DISABLE ROW LEVEL SECURITY")).rejects.toThrow(
      /must be owner/,
    );
    await expect(
      b.pool.query("UPDATE instance_roles SET instance_id = $1 WHERE instance_id = $2", [idA, idB]),
    ).rejects.toThrow(/permission denied/);
  });

  it("decides the grants of every table", async () => {
    const { rows } = await adminPool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
    );
    expect(rows.map((row) => row.table_name).sort()).toEqual(Object.keys(INSTANCE_GRANTS).sort());
  });

  it("refuses to migrate as an instance role, saying why", async () => {
    await adminPool.query("DELETE FROM schema_migrations WHERE version = 9");
    try {
      await expect(openPostgres({ url: a.role.url })).rejects.toThrow(
        /needs migrations \(009_instance_roles\.sql\).*role of instance .*may not change the schema/,
      );
    } finally {
      await adminPool.query(
        "INSERT INTO schema_migrations (version, name) VALUES (9, '009_instance_roles.sql')",
      );
    }
  });

  it("remove-instance revokes the role: its connections end and it cannot log in again", async () => {
    const idC = `roles-c-${suffix}`;
    const c = await connect(await addInstanceRole(adminPool, database.url, idC));
    try {
      expect((await c.pool.query("SELECT 1")).rowCount).toBe(1);
      expect(await removeInstanceRole(adminPool, idC)).toMatchObject({ instanceId: idC });
      await expect(c.pool.query("SELECT 1")).rejects.toThrow();
      const fresh = new pg.Client({ connectionString: c.role.url });
      await expect(fresh.connect()).rejects.toThrow(/does not exist|authentication failed/);
      await fresh.end().catch(() => undefined);
      expect(await removeInstanceRole(adminPool, idC)).toBeNull();
    } finally {
      await c.queue.close();
      await c.pool.end().catch(() => undefined);
      await admin((client) => client.query(`DROP ROLE IF EXISTS "picklebot_i_${idC}"`));
    }
  });
});
