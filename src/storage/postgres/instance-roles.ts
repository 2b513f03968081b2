/**
 * Per-instance credentials of distributed mode (migrations/postgres/009_instance_roles.sql):
 * `picklebot cluster add-instance NAME` makes a PostgreSQL login role for one instance,
 * with only the grants a server needs and no DDL, and maps it to the instance id; the
 * row-level policies of migration 009 then let it change only the jobs it holds. Run with
 * the admin URL (the owner of the tables, allowed to CREATE ROLE).
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { UserError } from "../../base/errors.js";
import { inTransaction } from "./database.js";

/**
 * What an instance role may do to each table; row-level policies narrow `jobs`,
 * `instances` and `leases` further. A table missing here is out of an instance's reach
 * (a test fails when a migration adds a table without deciding).
 */
export const INSTANCE_GRANTS = {
  jobs: "SELECT, INSERT, UPDATE, DELETE",
  sessions: "SELECT, INSERT, UPDATE",
  messages: "SELECT, INSERT",
  usage: "SELECT, INSERT",
  cron_state: "SELECT, INSERT, UPDATE",
  instances: "SELECT, INSERT, UPDATE, DELETE",
  leases: "SELECT, INSERT, UPDATE, DELETE",
  outbox: "SELECT, INSERT, UPDATE, DELETE",
  pairing_requests: "SELECT, INSERT, DELETE",
  paired_users: "SELECT, INSERT, UPDATE, DELETE",
  pairing_refusals: "SELECT, INSERT, UPDATE",
  pairing_replacements: "SELECT, INSERT, DELETE",
  approval_requests: "SELECT, INSERT, UPDATE",
  approval_grants: "SELECT, INSERT, UPDATE, DELETE",
  memories: "SELECT, INSERT, UPDATE, DELETE",
  memory_changes: "SELECT, INSERT",
  person_links: "SELECT, INSERT, DELETE",
  session_memory: "SELECT, INSERT, UPDATE",
  schedules: "SELECT, INSERT, UPDATE",
  schema_migrations: "SELECT",
  instance_roles: "SELECT",
} as const satisfies Record<string, string>;

/** The role of instance `id`. */
const INSTANCE_ROLE_PREFIX = "picklebot_i_";

/** PostgreSQL's longest identifier (NAMEDATALEN - 1). */
const MAX_ROLE_LENGTH = 63;

/** A role made by {@link addInstanceRole}. */
export interface InstanceRole {
  instanceId: string;
  role: string;
  createdAt: number;
}

/** What {@link addInstanceRole} made: the role, and the URL an instance connects with. */
export interface NewInstanceRole extends InstanceRole {
  url: string;
}

/**
 * Creates the login role of instance `instanceId` on the database of `adminUrl` (already
 * migrated: pass the pool from `openPostgres`), grants it {@link INSTANCE_GRANTS} and maps
 * it to the id; one transaction. Throws UserError for a bad or taken name, or an admin
 * role that may not create roles.
 */
export async function addInstanceRole(
  pool: pg.Pool,
  adminUrl: string,
  instanceId: string,
): Promise<NewInstanceRole> {
  const role = roleName(instanceId);
  const password = randomBytes(24).toString("base64url");
  const createdAt = await explained(`create the role of instance "${instanceId}"`, () =>
    inTransaction(pool, async (client) => {
      const taken = await client.query(
        "SELECT 1 FROM instance_roles WHERE instance_id = $1 UNION ALL SELECT 1 FROM pg_roles WHERE rolname = $2",
        [instanceId, role],
      );
      if ((taken.rowCount ?? 0) > 0) {
        throw new UserError(
          `instance "${instanceId}" already has a role (${role}); remove it first with picklebot cluster remove-instance ${instanceId}`,
        );
      }
      const ident = pg.escapeIdentifier(role);
      await client.query(
        `CREATE ROLE ${ident} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD ${pg.escapeLiteral(password)}`,
      );
      await client.query(`GRANT USAGE ON SCHEMA ${await schemaOf(client)} TO ${ident}`);
      for (const [table, privileges] of Object.entries(INSTANCE_GRANTS)) {
        await client.query(`GRANT ${privileges} ON ${table} TO ${ident}`);
      }
      await client.query(
        `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${await schemaOf(client)} TO ${ident}`,
      );
      const { rows } = await client.query<{ created_at: Date }>(
        "INSERT INTO instance_roles (role, instance_id) VALUES ($1, $2) RETURNING created_at",
        [role, instanceId],
      );
      return (rows[0] as { created_at: Date }).created_at.getTime();
    }),
  );
  return { instanceId, role, createdAt, url: urlFor(adminUrl, role, password) };
}

/**
 * Revokes instance `instanceId`'s role: it may no longer log in, its open connections are
 * ended, its privileges and anything it owns are dropped, and the role is dropped.
 * Returns the role, or null when the instance has none. Its running jobs are requeued by
 * the leader once its instance row expires, as for any dead instance.
 */
export async function removeInstanceRole(
  pool: pg.Pool,
  instanceId: string,
): Promise<InstanceRole | null> {
  const removed = await explained(`remove the role of instance "${instanceId}"`, () =>
    inTransaction(pool, async (client) => {
      const { rows } = await client.query<{ role: string; created_at: Date }>(
        "DELETE FROM instance_roles WHERE instance_id = $1 RETURNING role, created_at",
        [instanceId],
      );
      const row = rows[0];
      if (!row) return null;
      const ident = pg.escapeIdentifier(row.role);
      const oid = await client.query<{ oid: number }>(
        "SELECT oid::integer AS oid FROM pg_roles WHERE rolname = $1",
        [row.role],
      );
      await client.query(`ALTER ROLE ${ident} NOLOGIN`);
      await dropPrivileges(client, ident);
      await client.query(`DROP ROLE ${ident}`);
      const removedRole = { instanceId, role: row.role, createdAt: row.created_at.getTime() };
      return { removedRole, oid: oid.rows[0]?.oid };
    }),
  );
  if (!removed) return null;
  // After the commit, so that no connection logs in again meanwhile; by the role's oid,
  // which pg_stat_activity keeps for a dropped role.
  if (removed.oid !== undefined) await endConnections(pool, removed.oid);
  return removed.removedRole;
}

/** Every instance role, by instance id. */
export async function listInstanceRoles(pool: pg.Pool): Promise<InstanceRole[]> {
  const { rows } = await pool.query<{ role: string; instance_id: string; created_at: Date }>(
    "SELECT role, instance_id, created_at FROM instance_roles ORDER BY instance_id",
  );
  return rows.map((row) => ({
    instanceId: row.instance_id,
    role: row.role,
    createdAt: row.created_at.getTime(),
  }));
}

/**
 * The instance id of the connected role, or null when it is not an instance role (the
 * admin role, or any role made by hand).
 */
export async function connectedInstanceId(client: pg.ClientBase | pg.Pool): Promise<string | null> {
  const { rows } = await client.query<{ id: string | null }>(
    "SELECT picklebot_instance_id() AS id",
  );
  return rows[0]?.id ?? null;
}

/** `picklebot_i_<id>`; throws UserError when it does not fit a PostgreSQL identifier. */
function roleName(instanceId: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(instanceId)) {
    throw new UserError(
      `instance name "${instanceId}": expected 1–64 letters, digits, "-" and "_" (the same as cluster.instance_id)`,
    );
  }
  const role = `${INSTANCE_ROLE_PREFIX}${instanceId}`;
  if (role.length > MAX_ROLE_LENGTH) {
    throw new UserError(
      `instance name "${instanceId}" is too long for its role ${role}: at most ${MAX_ROLE_LENGTH - INSTANCE_ROLE_PREFIX.length} characters`,
    );
  }
  return role;
}

/** `adminUrl` with the instance's role and password instead of the admin's. */
function urlFor(adminUrl: string, role: string, password: string): string {
  const url = new URL(adminUrl);
  url.username = encodeURIComponent(role);
  url.password = encodeURIComponent(password);
  return url.toString();
}

/** The schema the tables live in, quoted. */
async function schemaOf(client: pg.ClientBase): Promise<string> {
  const { rows } = await client.query<{ schema: string }>(
    "SELECT relnamespace::regnamespace::text AS schema FROM pg_class WHERE oid = 'jobs'::regclass",
  );
  return rows[0]?.schema ?? "public";
}

/**
 * `DROP OWNED BY`, which needs the privileges of the role (a superuser, or a member); for
 * an admin that has only CREATEROLE, the grants of {@link addInstanceRole} are revoked
 * instead (an instance role cannot create objects, so it owns none).
 */
async function dropPrivileges(client: pg.ClientBase, ident: string): Promise<void> {
  await client.query("SAVEPOINT drop_owned");
  try {
    await client.query(`DROP OWNED BY ${ident}`);
    await client.query("RELEASE SAVEPOINT drop_owned");
  } catch (error) {
    if (!(error instanceof pg.DatabaseError) || error.code !== "42501") throw error;
    await client.query("ROLLBACK TO SAVEPOINT drop_owned");
    const schema = await schemaOf(client);
    await client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA ${schema} FROM ${ident}`);
    await client.query(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${schema} FROM ${ident}`);
    await client.query(`REVOKE ALL ON SCHEMA ${schema} FROM ${ident}`);
  }
}

/** Ends the connections still open as role `oid` (best effort: needs pg_signal_backend). */
async function endConnections(pool: pg.Pool, oid: number): Promise<void> {
  await pool
    .query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usesysid = $1", [oid])
    .catch(() => undefined);
}

/** Runs `work`; a PostgreSQL permission error becomes a UserError saying what is needed. */
async function explained<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof pg.DatabaseError && error.code === "42501") {
      throw new UserError(
        `cannot ${what}: ${error.message}; run this with the admin URL (queue.url or DATABASE_URL naming the owner of the tables, a role with CREATEROLE)`,
        { cause: error },
      );
    }
    throw error;
  }
}
