import { get, type IncomingMessage } from "node:http";
import { connect } from "node:net";
import { constants, createGunzip, gunzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { readSse, type SseMessage, untilQuiet } from "../../src/base/sse.js";
import { EventHub } from "../../src/events/hub.js";
import { acceptsGzip, type EventRoutesOptions } from "../../src/events/routes.js";
import { HttpEndpoint } from "../../src/http/endpoint.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { FANOUT_PROCESS, fanoutProcesses } from "../helpers/cli.js";
import { waitFor } from "../helpers/wait.js";

const enqueued = (jobId: string) =>
  ({ type: "job.enqueued", jobId, agentId: "main", sessionKey: "cli:1", attempts: 0 }) as const;
const done = (jobId: string) => ({ ...enqueued(jobId), type: "job.done", attempts: 1 }) as const;

/** The access token of the endpoints served here; every request sends it. */
const ACCESS = { token: "events-test-token-0123456789" };
const AUTHORIZATION = `Bearer ${ACCESS.token}`;

/** `fetch` with the access token. */
function ownerFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", AUTHORIZATION);
  return fetch(url, { ...init, headers });
}

const endpoints: HttpEndpoint[] = [];
afterEach(async () => {
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
});

/** Serves `hub` at `/events` (and `/metrics`) as the server does; resolves with the base URL. */
async function serve(
  hub: EventHub,
  {
    metrics = new ServerMetrics(),
    ...eventStream
  }: { metrics?: ServerMetrics } & EventRoutesOptions = {},
): Promise<string> {
  const endpoint = new HttpEndpoint({
    host: "127.0.0.1",
    port: 0,
    registry: metrics.registry,
    health: async () => ({ healthy: true }),
    access: ACCESS,
    events: hub,
    eventStream: {
      script: FANOUT_PROCESS,
      onDropped: (count) => metrics.eventsDropped.inc(count),
      onClients: (count) => metrics.eventClients.set(count),
      ...eventStream,
    },
  });
  endpoints.push(endpoint);
  return `http://${await endpoint.listen()}`;
}

/** A number `/metrics` shows. */
async function metric(base: string, name: string): Promise<number> {
  const text = await (await ownerFetch(`${base}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
}

/** Waits until `/metrics` shows `count` live `/events` clients. */
async function untilClients(base: string, count: number): Promise<void> {
  for (let tries = 0; (await metric(base, "picklebot_event_clients")) !== count; tries++) {
    if (tries > 500) throw new Error(`/metrics never showed ${count} /events clients`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Reads `count` messages from an open stream, then closes it. */
async function take(response: Response, count: number): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  if (!response.body) throw new Error("no body");
  for await (const message of readSse(response.body)) {
    messages.push(message);
    if (messages.length === count) break;
  }
  return messages;
}

describe("GET /events", () => {
  it("streams buffered then live events as SSE with id, event and JSON data", async () => {
    const hub = new EventHub({ instance: "local" });
    hub.publish(enqueued("a"));
    const base = await serve(hub);
    const response = await ownerFetch(`${base}/events`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const reading = take(response, 2);
    setTimeout(() => hub.publish(done("a")), 50);
    const [first, second] = await reading;
    expect(first).toMatchObject({ id: "1", event: "job.enqueued" });
    expect(JSON.parse(first?.data ?? "")).toMatchObject({ jobId: "a", seq: 1, instance: "local" });
    expect(second).toMatchObject({ id: "2", event: "job.done" });
  });

  it("resumes after Last-Event-ID, or ?after=, from the buffer", async () => {
    const hub = new EventHub({ instance: "local" });
    for (const id of ["a", "b", "c"]) hub.publish(enqueued(id));
    const base = await serve(hub);
    const byHeader = await take(
      await ownerFetch(`${base}/events`, { headers: { "last-event-id": "2" } }),
      1,
    );
    expect(byHeader.map((message) => message.id)).toEqual(["3"]);
    const byQuery = await take(await ownerFetch(`${base}/events?after=1`), 2);
    expect(byQuery.map((message) => message.id)).toEqual(["2", "3"]);
  });

  it("gives the whole buffer to a resume point past the stream's end (from before a restart)", async () => {
    const hub = new EventHub({ instance: "local" });
    for (const id of ["a", "b"]) hub.publish(enqueued(id));
    const base = await serve(hub);
    const live = await ownerFetch(`${base}/events`, { headers: { "last-event-id": "500" } });
    const reading = take(live, 3);
    setTimeout(() => hub.publish(done("a")), 50);
    expect((await reading).map((message) => message.id)).toEqual(["1", "2", "3"]);
    const once = await ownerFetch(`${base}/events?follow=false&after=500`);
    expect((await once.text()).match(/^id: \d+$/gm)).toEqual(["id: 1", "id: 2", "id: 3"]);
  });

  it("keeps only the types asked for with ?type=", async () => {
    const hub = new EventHub({ instance: "local" });
    hub.publish(enqueued("a"));
    hub.publish({ type: "cron.fired", cronId: "daily", agentId: "main", jobId: "a" });
    hub.publish(done("a"));
    const base = await serve(hub);
    const messages = await take(await ownerFetch(`${base}/events?type=cron.*,job.done`), 2);
    expect(messages.map((message) => message.event)).toEqual(["cron.fired", "job.done"]);
  });

  it("answers HEAD with the stream's headers and no body", async () => {
    const hub = new EventHub({ instance: "local" });
    hub.publish(enqueued("a"));
    const base = await serve(hub);
    const response = await ownerFetch(`${base}/events`, { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    expect(await response.text()).toBe("");
    expect(fanoutProcesses()).toEqual([]);
  });

  it("refuses a resume point that is not an event seq", async () => {
    const base = await serve(new EventHub({ instance: "local" }));
    const response = await ownerFetch(`${base}/events?after=yesterday`);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("Last-Event-ID and ?after= take an event seq");
  });

  it("forgets a client that went away, and stops its fan-out process when idle", async () => {
    const hub = new EventHub({ instance: "local" });
    const base = await serve(hub, { idleMs: 50 });
    const controller = new AbortController();
    await ownerFetch(`${base}/events`, { signal: controller.signal });
    await untilClients(base, 1);
    expect(fanoutProcesses()).toHaveLength(1);
    expect(hub.subscriberCount).toBe(1);
    controller.abort();
    await untilClients(base, 0);
    await waitFor(() => fanoutProcesses().length === 0, "the idle fan-out process to exit");
    expect(hub.subscriberCount).toBe(0);
  });
});

describe("GET /events when its fan-out process dies", () => {
  it("ends the streams; clients resume with Last-Event-ID from a new one and miss nothing", async () => {
    const hub = new EventHub({ instance: "local" });
    const exits: string[] = [];
    const base = await serve(hub, { onExit: (reason) => exits.push(reason) });
    const first = readSse((await ownerFetch(`${base}/events`)).body ?? new ReadableStream())[
      Symbol.asyncIterator
    ]();
    hub.publish(enqueued("a"));
    const seen = await first.next();
    expect(seen.value).toMatchObject({ id: "1", event: "job.enqueued" });
    const [pid] = fanoutProcesses();
    process.kill(pid ?? 0, "SIGKILL");
    expect(await first.next().catch(() => ({ done: true }))).toMatchObject({ done: true });
    await waitFor(() => exits.length === 1, "the server to hear of the exit");
    expect(exits[0]).toContain("the /events fan-out process ended: it exited (SIGKILL)");
    hub.publish(done("a")); // while no fan-out process runs
    const resumed = await take(
      await ownerFetch(`${base}/events`, { headers: { "last-event-id": "1" } }),
      1,
    );
    expect(resumed).toMatchObject([{ id: "2", event: "job.done" }]);
    expect(fanoutProcesses()).not.toContain(pid);
  });
});

describe("GET /events when its fan-out process stops taking events", () => {
  it("drops the batches it is behind by and counts them, while publishing goes on", async () => {
    const hub = new EventHub({ instance: "local" });
    const base = await serve(hub, { maxBatchesInFlight: 2 });
    const reader = readSse((await ownerFetch(`${base}/events`)).body ?? new ReadableStream())[
      Symbol.asyncIterator
    ]();
    await untilClients(base, 1);
    const [pid = 0] = fanoutProcesses();
    process.kill(pid, "SIGSTOP");
    try {
      const error = "x".repeat(2_000);
      for (let round = 0; (await metric(base, "picklebot_events_dropped_total")) === 0; round++) {
        for (let i = 0; i < 100; i++) hub.publish({ ...done(`j${i}`), type: "job.failed", error });
        await new Promise((resolve) => setTimeout(resolve, 30));
        if (round > 300) throw new Error("nothing was dropped");
      }
    } finally {
      process.kill(pid, "SIGCONT");
    }
    // Once it takes events again, its client gets the ones that were not dropped, then new
    // ones. While it works through its backlog a new event may be dropped too (a busy host
    // takes longer): the new event is published again until it arrives.
    const again = setInterval(() => hub.publish(done("after")), 200);
    try {
      for (let next = await reader.next(); ; next = await reader.next()) {
        if (next.done) throw new Error("the stream ended");
        if (next.value.data.includes('"jobId":"after"')) break;
      }
    } finally {
      clearInterval(again);
    }
  });
});

describe("GET /events with a client that stops reading", () => {
  it("drops that client's overflow and counts it in /metrics, while publishing goes on", async () => {
    const metrics = new ServerMetrics();
    const hub = new EventHub({ instance: "local" });
    const base = await serve(hub, { metrics });
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname);
    socket.write(
      `GET /events HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: ${AUTHORIZATION}\r\n\r\n`,
    );
    socket.pause(); // never reads: the kernel's buffers fill, then the stream stalls
    await untilClients(base, 1);
    const reader = await ownerFetch(`${base}/events`);
    const error = "x".repeat(2_000);
    for (let round = 0; (await metric(base, "picklebot_events_dropped_total")) === 0; round++) {
      for (let i = 0; i < 1_000; i++) hub.publish({ ...done(`j${i}`), type: "job.failed", error });
      await new Promise((resolve) => setTimeout(resolve, 60));
      if (round > 200) throw new Error("nothing was dropped");
    }
    // The client that reads got every event, the stalled one cost nothing but its drops.
    hub.publish(done("last"));
    const seen = await take(reader, 1);
    expect(Number(seen[0]?.id)).toBeGreaterThan(0);
    socket.destroy();
  });
});

/** `GET path` with node:http (which asks for no encoding unless told), as a raw response. */
function rawGet(base: string, path: string, headers: Record<string, string> = {}) {
  return new Promise<IncomingMessage>((resolve, reject) => {
    get(`${base}${path}`, { headers: { authorization: AUTHORIZATION, ...headers } }, resolve).on(
      "error",
      reject,
    );
  });
}

/** Reads a response's (inflated) text until it holds `count` events. */
function readEvents(body: NodeJS.ReadableStream, count: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    body.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if ((text.match(/^event: /gm) ?? []).length >= count) resolve(text);
    });
    body.on("error", reject);
  });
}

const gunzipping = (response: IncomingMessage) =>
  response.pipe(createGunzip({ flush: constants.Z_SYNC_FLUSH }));

describe("GET /events compressed", () => {
  it("gzips the stream for a client that accepts gzip, window after window", async () => {
    const hub = new EventHub({ instance: "local" });
    hub.publish(enqueued("a"));
    const base = await serve(hub);
    const early = await rawGet(base, "/events", { "accept-encoding": "gzip, deflate, br" });
    expect(early.headers["content-encoding"]).toBe("gzip");
    expect(early.headers.vary).toBe("accept-encoding");
    const earlyText = readEvents(gunzipping(early), 4);
    hub.publish(done("a"));
    await new Promise((resolve) => setTimeout(resolve, 120)); // a window of its own
    // A client that joins later gets the same shared window bytes after its own start.
    const late = await rawGet(base, "/events?after=2", { "accept-encoding": "gzip" });
    const lateText = readEvents(gunzipping(late), 2);
    hub.publish(enqueued("b"));
    hub.publish(done("b"));
    const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => match[1]);
    expect(ids(await earlyText)).toEqual(["1", "2", "3", "4"]);
    expect(ids(await lateText)).toEqual(["3", "4"]);
    expect(await earlyText).toContain('"jobId":"b"');
    early.destroy();
    late.destroy();
  });

  it("gives each crowd of one filter only its types, gzipped or not", async () => {
    const hub = new EventHub({ instance: "local" });
    const base = await serve(hub);
    const asks = [
      { path: "/events?type=job.done", gzip: true },
      { path: "/events?type=job.done", gzip: true },
      { path: "/events?type=job.done", gzip: false },
      { path: "/events", gzip: true },
    ];
    const responses = await Promise.all(
      asks.map(({ path, gzip }) => rawGet(base, path, gzip ? { "accept-encoding": "gzip" } : {})),
    );
    const texts = responses.map((response, index) =>
      readEvents(asks[index]?.gzip ? gunzipping(response) : response, index === 3 ? 4 : 2),
    );
    for (const id of ["a", "b"]) {
      hub.publish(enqueued(id));
      hub.publish(done(id));
    }
    const types = (text: string) => [...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1]);
    const [first, second, plain, everything = ""] = await Promise.all(texts);
    for (const text of [first, second, plain]) {
      expect(types(text ?? "")).toEqual(["job.done", "job.done"]);
    }
    expect(types(everything)).toEqual(["job.enqueued", "job.done", "job.enqueued", "job.done"]);
    for (const response of responses) response.destroy();
  });

  it("gets every event, in order, to a crowd written a hundred clients a turn", async () => {
    const hub = new EventHub({ instance: "local" });
    const base = await serve(hub);
    const crowd = await Promise.all(
      Array.from({ length: 250 }, (_, index) =>
        rawGet(base, "/events", index % 2 ? { "accept-encoding": "gzip" } : {}),
      ),
    );
    const texts = crowd.map((response) =>
      readEvents(response.headers["content-encoding"] ? gunzipping(response) : response, 6),
    );
    crowd[7]?.destroy(); // one leaves before the window is written
    for (const id of ["a", "b", "c"]) {
      hub.publish(enqueued(id));
      await new Promise((resolve) => setTimeout(resolve, 20));
      hub.publish(done(id));
    }
    const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => match[1]);
    const read = await Promise.all(texts.filter((_, index) => index !== 7));
    for (const text of read) expect(ids(text)).toEqual(["1", "2", "3", "4", "5", "6"]);
    for (const response of crowd) response.destroy();
  });

  it("sends plain text to a client that asks for no encoding, or refuses gzip", async () => {
    const hub = new EventHub({ instance: "local" });
    const base = await serve(hub);
    const asked: Record<string, string>[] = [{}, { "accept-encoding": "gzip;q=0, identity" }];
    for (const headers of asked) {
      const response = await rawGet(base, "/events", headers);
      expect(response.headers["content-encoding"]).toBeUndefined();
      const text = readEvents(response, 1);
      hub.publish(enqueued("plain"));
      expect(await text).toContain("event: job.enqueued\ndata: {");
      response.destroy();
    }
  });

  it("ends a ?follow=false stream as a whole gzip file, trailer included", async () => {
    const hub = new EventHub({ instance: "local" });
    for (const id of ["a", "b"]) hub.publish(enqueued(id));
    const base = await serve(hub);
    const response = await rawGet(base, "/events?follow=false", { "accept-encoding": "gzip" });
    const chunks: Buffer[] = [];
    for await (const chunk of response) chunks.push(chunk as Buffer);
    const text = gunzipSync(Buffer.concat(chunks)).toString("utf8");
    expect(text.match(/^event: job.enqueued$/gm)).toHaveLength(2);
  });
});

describe("acceptsGzip", () => {
  it("reads Accept-Encoding as browsers and proxies write it", () => {
    expect(acceptsGzip("gzip, deflate, br, zstd")).toBe(true);
    expect(acceptsGzip("GZIP;q=0.5")).toBe(true);
    expect(acceptsGzip("*")).toBe(true);
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip("identity")).toBe(false);
    expect(acceptsGzip("br, gzip;q=0")).toBe(false);
    expect(acceptsGzip("gzip; q=0.000")).toBe(false);
  });
});

describe("eventRoutes", () => {
  it("sends heartbeat comments on an idle stream", async () => {
    const base = await serve(new EventHub({ instance: "local" }), { heartbeatMs: 20 });
    const controller = new AbortController();
    const response = await ownerFetch(`${base}/events`, { signal: controller.signal });
    const reader = response.body?.getReader();
    if (!reader) throw new Error("no body");
    let text = "";
    while (!text.includes(": heartbeat")) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    expect(text).toContain(": connected");
  });
});

describe("untilQuiet", () => {
  it("passes a stream through, and ends it when nothing comes for a while", async () => {
    const encoder = new TextEncoder();
    let push: (text: string) => void = () => undefined;
    const silent = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (text) => controller.enqueue(encoder.encode(text));
      },
    });
    const messages = readSse(untilQuiet(silent, 100));
    push("id: 1\ndata: {}\n\n");
    setTimeout(() => push(": heartbeat\n\nid: 2\ndata: {}\n\n"), 60);
    const ids: (string | null)[] = [];
    for await (const message of messages) ids.push(message.id);
    expect(ids).toEqual(["1", "2"]);
  });
});

describe("readSse", () => {
  it("joins multi-line data and skips comments", async () => {
    const body = new Response(": hello\n\nid: 7\nevent: x\ndata: one\ndata: two\n\n").body;
    if (!body) throw new Error("no body");
    const messages: SseMessage[] = [];
    for await (const message of readSse(body)) messages.push(message);
    expect(messages).toEqual([{ id: "7", event: "x", data: "one\ntwo" }]);
  });
});
