/**
 * The event stream in distributed mode: two `picklebot server` processes on one PostgreSQL
 * database; each one's `/events` shows the other's events (PostgreSQL NOTIFY), once each.
 */
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readSse } from "../../src/base/sse.js";
import type { PicklebotEvent } from "../../src/ports/index.js";
import type { PostgresJobQueue } from "../../src/storage/postgres/queue.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import {
  type ClusterDatabase,
  clusterYaml,
  openClusterDatabase,
  postgresSkipReason,
} from "../helpers/postgres.js";
import { killAllServers, type ServerProcess, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const skipReason = await postgresSkipReason();

/** The events a server still buffers (`?follow=false`). */
async function buffered(server: ServerProcess): Promise<PicklebotEvent[]> {
  const response = await server.fetch("/events?follow=false");
  const events: PicklebotEvent[] = [];
  if (!response.body) return events;
  for await (const message of readSse(response.body)) events.push(JSON.parse(message.data));
  return events;
}

describe.skipIf(skipReason !== null)("the event stream of a cluster", () => {
  let cluster: ClusterDatabase | undefined;
  let pool: pg.Pool;
  let producer: PostgresJobQueue;
  let fake: FakeAnthropic;
  const workspaces: TempWorkspace[] = [];

  beforeAll(async () => {
    cluster = await openClusterDatabase("cluster_events");
    ({ pool, producer } = cluster);
    fake = await startFakeAnthropic();
  });
  afterAll(async () => {
    await fake?.close();
    await cluster?.close();
  });
  afterEach(async () => {
    await killAllServers();
    for (const workspace of workspaces.splice(0)) workspace.remove();
  });

  async function startInstance(id: string): Promise<ServerProcess> {
    const url = cluster?.database.url ?? "";
    const workspace = makeWorkspace({
      "picklebot.yaml": fakeModelConfig(fake.url, clusterYaml(url)),
    });
    workspaces.push(workspace);
    return startServer(workspace.dir, { env: { PICKLEBOT_INSTANCE_ID: id } });
  }

  it("shows every instance's job events on each instance's /events, once, with their instance", async () => {
    const a = await startInstance("ev-a");
    const b = await startInstance("ev-b");
    await waitFor(
      async () => (await pool.query("SELECT count(*)::int AS n FROM instances")).rows[0]?.n === 2,
      "both instances registered",
    );
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const job = await producer.enqueue({
        agentId: "pickle",
        sessionKey: `k${i}`,
        message: `hello ${i}`,
        mode: "chat",
        replyTo: { kind: "silent" },
      });
      ids.push(job.id);
    }
    const doneOn = async (server: ServerProcess) =>
      (await buffered(server)).filter((event) => event.type === "job.done");
    await waitFor(async () => (await doneOn(a)).length === 6, "6 job.done on instance a");
    await waitFor(async () => (await doneOn(b)).length === 6, "6 job.done on instance b");
    for (const server of [a, b]) {
      const done = await doneOn(server);
      expect(done.map((event) => ("jobId" in event ? event.jobId : "")).sort()).toEqual(
        [...ids].sort(),
      );
      for (const event of done) expect(["ev-a", "ev-b"]).toContain(event.instance);
    }
    const joined = (await buffered(a)).filter((event) => event.type === "instance.joined");
    expect(joined.map((event) => ("subject" in event ? event.subject : null))).toContain("ev-b");
  });
});
