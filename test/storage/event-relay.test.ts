/** The cluster's event stream over PostgreSQL NOTIFY, between two instances' hubs. */
import { afterEach, describe, expect, it } from "vitest";
import { EventHub } from "../../src/events/hub.js";
import type { PicklebotEvent } from "../../src/ports/index.js";
import { connectionConfig, openPostgres } from "../../src/storage/postgres/database.js";
import {
  carried,
  MAX_PAYLOAD_BYTES,
  PostgresEventRelay,
} from "../../src/storage/postgres/event-relay.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait.js";

const failed = (jobId: string, error: string) =>
  ({
    type: "job.failed",
    jobId,
    agentId: "main",
    sessionKey: "cli:1",
    attempts: 1,
    error,
  }) as const;

describe("carried", () => {
  it("leaves out the seq and shortens a long error so a packet fits NOTIFY's limit", () => {
    const event = { ...failed("a", "x".repeat(50_000)), seq: 9, at: 1, instance: "pb-1" };
    const text = carried(event);
    expect(Buffer.byteLength(text)).toBeLessThan(MAX_PAYLOAD_BYTES);
    const parsed = JSON.parse(text) as PicklebotEvent;
    expect(parsed).not.toHaveProperty("seq");
    expect(parsed).toMatchObject({ jobId: "a", instance: "pb-1" });
  });
});

const skipReason = await postgresSkipReason();
describe.skipIf(skipReason !== null)("PostgresEventRelay", () => {
  const database = useMigratedDatabase("event_relay");
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** One instance: its hub, forwarding to and relaying from PostgreSQL. */
  async function instance(id: string): Promise<EventHub> {
    const settings = { url: database().url };
    const pool = await openPostgres(settings);
    const relay = new PostgresEventRelay({ pool, connection: connectionConfig(settings) });
    const hub = new EventHub({ instance: id, forward: (event) => relay.send(event) });
    const listening = new Promise<void>((resolve) => {
      relay.start(
        (event) => {
          if (event.instance === "__ready__") resolve();
          else if (event.instance !== id) hub.relay(event);
        },
        () => undefined,
      );
    });
    closers.push(async () => {
      await relay.close();
      await pool.end();
    });
    // Listening is asynchronous: wait until a probe comes back through PostgreSQL.
    await waitFor(async () => {
      relay.send({ ...failed("probe", ""), seq: 0, at: 0, instance: "__ready__" });
      return Promise.race([listening.then(() => true), new Promise((r) => setTimeout(r, 50))]);
    }, "the LISTEN connection");
    return hub;
  }

  it("shows each instance's events in every instance's stream, once, in order", async () => {
    const a = await instance("pb-a");
    const b = await instance("pb-b");
    for (let i = 0; i < 300; i++) a.publish(failed(`job-${i}`, "boom"));
    b.publish(failed("from-b", "boom"));
    await waitFor(
      () => b.since(0).length === 301,
      () => `b has ${b.since(0).length} events`,
    );
    await waitFor(
      () => a.since(0).length === 301,
      () => `a has ${a.since(0).length} events`,
    );
    const fromA = b.since(0).filter((event) => event.instance === "pb-a");
    expect(fromA.map((event) => (event.type === "job.failed" ? event.jobId : ""))).toEqual(
      Array.from({ length: 300 }, (_, i) => `job-${i}`),
    );
    expect(a.since(0).filter((event) => event.instance === "pb-a")).toHaveLength(300);
    expect(a.since(0).at(-1)).toMatchObject({ instance: "pb-b", jobId: "from-b" });
  });
});
