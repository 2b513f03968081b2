/**
 * `picklebot cluster`: per-instance database credentials for distributed mode. Run with the
 * admin URL (queue.url or DATABASE_URL naming the owner of the tables); each instance then
 * connects with its own role, which row-level policies confine to the jobs it holds.
 */
import { Command } from "commander";
import type pg from "pg";
import { UserError } from "../base/errors.js";
import type { Config } from "../config/index.js";
import type * as InstanceRoles from "../storage/postgres/instance-roles.js";
import { loadWorkspace } from "./context.js";
import { formatTime, printJson, printTable } from "./output.js";

/** The `cluster` command group. */
export function clusterCommand(): Command {
  const cluster = new Command("cluster").description(
    "per-instance database roles for distributed mode (run with the admin URL)",
  );
  cluster
    .command("add-instance")
    .description("create the PostgreSQL role of one instance and print its URL and id")
    .argument("<name>", "the instance id (PICKLEBOT_INSTANCE_ID of that server)")
    .option("--json", "print JSON for scripts")
    .action(async (name: string, options: { json?: boolean }, command: Command) => {
      await withAdminPool(command, async (pool, url, { addInstanceRole }) => {
        const added = await addInstanceRole(pool, url, name);
        if (options.json) return printJson(added);
        console.log(
          `# instance ${added.instanceId}: PostgreSQL role ${added.role}; the password is shown only now`,
        );
        console.log(`DATABASE_URL=${added.url}`);
        console.log(`PICKLEBOT_INSTANCE_ID=${added.instanceId}`);
      });
    });
  cluster
    .command("remove-instance")
    .description("revoke an instance's role: drop it and end its connections")
    .argument("<name>", "the instance id")
    .action(async (name: string, _options: unknown, command: Command) => {
      await withAdminPool(command, async (pool, _url, { removeInstanceRole }) => {
        const removed = await removeInstanceRole(pool, name);
        if (!removed)
          throw new UserError(`instance "${name}" has no role (see cluster list-instances)`);
        console.log(`removed role ${removed.role} of instance ${removed.instanceId}`);
      });
    });
  cluster
    .command("list-instances")
    .description("list the instances that have their own role")
    .option("--json", "print JSON for scripts")
    .action(async (options: { json?: boolean }, command: Command) => {
      await withAdminPool(command, async (pool, _url, { listInstanceRoles }) => {
        const roles = await listInstanceRoles(pool);
        if (options.json) return printJson(roles);
        if (roles.length === 0) return void console.log("no instance roles");
        printTable(
          ["instance", "role", "created"],
          roles.map((role) => [role.instanceId, role.role, formatTime(role.createdAt)]),
        );
      });
    });
  return cluster;
}

/**
 * Opens (and migrates) the database of the workspace's queue.url for `work`, with the
 * role functions. pg is imported here, not at the top: `--help` lists this command too.
 */
async function withAdminPool(
  command: Command,
  work: (pool: pg.Pool, url: string, roles: typeof InstanceRoles) => Promise<void>,
): Promise<void> {
  const url = postgresUrl(loadWorkspace(command).config);
  const [{ openPostgres }, roles] = await Promise.all([
    import("../storage/postgres/database.js"),
    import("../storage/postgres/instance-roles.js"),
  ]);
  const pool = await openPostgres({ url, poolSize: 1, applicationName: "picklebot-admin" });
  try {
    await work(pool, url, roles);
  } finally {
    await pool.end();
  }
}

function postgresUrl(config: Config): string {
  const postgres = config.queue.backend === "postgres" || config.history.backend === "postgres";
  if (!postgres || !config.queue.url) {
    throw new UserError(
      "picklebot cluster needs distributed mode: queue.backend: postgres and queue.url (or DATABASE_URL) in picklebot.yaml",
    );
  }
  return config.queue.url;
}
