/**
 * Per-instance credentials as a user sets them up: `picklebot cluster add-instance` with
 * the admin URL prints an instance's URL and id, a `picklebot server` started with them
 * runs jobs (as leader too: upkeep, crons, lease), and `remove-instance` revokes the role.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import {
  admin,
  type ClusterDatabase,
  clusterYaml,
  currentLeader,
  openClusterDatabase,
  postgresSkipReason,
} from "../helpers/postgres.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const skipReason = await postgresSkipReason();

/** What add-instance printed. */
interface Credentials {
  url: string;
  instanceId: string;
}

describe.skipIf(skipReason !== null)("picklebot cluster add-instance / remove-instance", () => {
  const suffix = randomBytes(3).toString("hex");
  const ids = [`e2e-a-${suffix}`, `e2e-b-${suffix}`];
  let cluster: ClusterDatabase;
  let fake: FakeAnthropic;
  const workspaces: TempWorkspace[] = [];
  /** Credentials add-instance printed, by id (the password is shown only once). */
  const printed = new Map<string, Credentials>();

  beforeAll(async () => {
    cluster = await openClusterDatabase("roles_e2e");
    fake = await startFakeAnthropic({
      defaultReply: (request) => ({ text: `re: ${lastUserText(request)}` }),
    });
  });

  afterEach(() => killAllServers());

  afterAll(async () => {
    await fake?.close();
    for (const workspace of workspaces.splice(0)) workspace.remove();
    await cluster?.close();
    await admin(async (client) => {
      for (const id of ids) await client.query(`DROP ROLE IF EXISTS "picklebot_i_${id}"`);
    });
  });

  /** A workspace whose queue.url is `url`. */
  function workspaceOn(url: string): string {
    const workspace = makeWorkspace({
      "picklebot.yaml": fakeModelConfig(fake.url, clusterYaml(url)),
    });
    workspaces.push(workspace);
    return workspace.dir;
  }

  async function cli(args: string[]) {
    return runCli([...args, "--workspace", workspaceOn(cluster.database.url)]);
  }

  async function addInstance(id: string): Promise<Credentials> {
    const result = await cli(["cluster", "add-instance", id]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const url = /^DATABASE_URL=(.+)$/m.exec(result.stdout)?.[1];
    const instanceId = /^PICKLEBOT_INSTANCE_ID=(.+)$/m.exec(result.stdout)?.[1];
    if (!url || !instanceId) throw new Error(`unexpected add-instance output: ${result.stdout}`);
    printed.set(id, { url, instanceId });
    return { url, instanceId };
  }

  function credentialsOf(id: string): Credentials {
    const known = printed.get(id);
    if (!known) throw new Error(`add-instance printed nothing for ${id} yet`);
    return known;
  }

  async function roleOf(url: string): Promise<string> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<{ role: string }>("SELECT current_user AS role")).rows[0]
        ?.role as string;
    } finally {
      await client.end();
    }
  }

  it("prints a URL that connects as the instance's own role, and the id to run with", async () => {
    const credentials = await addInstance(ids[0] as string);
    expect(credentials.instanceId).toBe(ids[0]);
    expect(await roleOf(credentials.url)).toBe(`picklebot_i_${ids[0]}`);
    const listed = await cli(["cluster", "list-instances"]);
    expect(listed.stdout).toContain(`picklebot_i_${ids[0]}`);
  });

  it("runs jobs end to end on servers that connect with their instance roles", async () => {
    const b = await addInstance(ids[1] as string);
    const a = credentialsOf(ids[0] as string);
    const servers = [
      await startServer(workspaceOn(a.url), { env: { PICKLEBOT_INSTANCE_ID: a.instanceId } }),
      await startServer(workspaceOn(b.url), { env: { PICKLEBOT_INSTANCE_ID: b.instanceId } }),
    ];
    await waitFor(async () => ids.includes((await currentLeader(cluster.pool)) ?? ""), "a leader");
    const jobs = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        cluster.producer.enqueue({
          agentId: "pickle",
          sessionKey: `console:roles-${n}`,
          message: `hello ${n}`,
          mode: "chat",
          replyTo: { kind: "silent" },
        }),
      ),
    );
    await waitFor(
      async () => (await cluster.producer.counts()).done === jobs.length,
      "every job done",
      30_000,
    );
    // The leader's upkeep (reaping, pruning), crons and lease ran under a role too.
    const refused = /row-level security|permission denied/;
    for (const server of servers) {
      expect(server.stderr).not.toMatch(refused);
      expect(server.linesMatching((line) => refused.test(JSON.stringify(line)))).toEqual([]);
    }
    // The leader, under its own role, removes the row of the other once it is dead.
    const leader = await currentLeader(cluster.pool);
    const other = servers[leader === a.instanceId ? 1 : 0];
    await other?.kill();
    const otherId = leader === a.instanceId ? b.instanceId : a.instanceId;
    await waitFor(
      async () =>
        (await cluster.pool.query("SELECT 1 FROM instances WHERE id = $1", [otherId])).rowCount ===
        0,
      "the dead instance's row reaped",
      10_000,
    );
  });

  it("refuses to start a server whose instance id is not its role's", async () => {
    const a = credentialsOf(ids[0] as string);
    const result = await runCli(["server", "--workspace", workspaceOn(a.url)], {
      env: { PICKLEBOT_INSTANCE_ID: "someone-else" },
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`belongs to instance "${ids[0]}"`);
  });

  it("remove-instance revokes the role: the URL no longer connects", async () => {
    const b = credentialsOf(ids[1] as string);
    const removed = await cli(["cluster", "remove-instance", ids[1] as string]);
    expect(removed.code).toBe(0);
    await expect(roleOf(b.url)).rejects.toThrow(/does not exist|authentication failed/);
    const again = await cli(["cluster", "remove-instance", ids[1] as string]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("has no role");
  });
});
