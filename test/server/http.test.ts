import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { HttpEndpoint } from "../../src/http/endpoint.js";

let endpoint: HttpEndpoint | undefined;
afterEach(() => endpoint?.close());

async function listenOn(host: string): Promise<string> {
  endpoint = new HttpEndpoint({
    host,
    port: 0,
    registry: new Registry(),
    health: async () => ({ healthy: true }),
    access: { token: "http-test-token-0123456789" },
  });
  return endpoint.listen();
}

describe("HttpEndpoint.listen", () => {
  it("announces an IPv4 bind as host:port, which `status` and `events` can fetch", async () => {
    const address = await listenOn("127.0.0.1");
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect((await fetch(`http://${address}/healthz`)).status).toBe(200);
  });

  it("announces an IPv6 bind in brackets, so the address makes a URL", async () => {
    const address = await listenOn("::1");
    expect(address).toMatch(/^\[::1\]:\d+$/);
    expect((await fetch(`http://${address}/healthz`)).status).toBe(200);
  });
});
