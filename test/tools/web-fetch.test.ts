import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebFetchTool } from "../../src/agents/tools/web-fetch.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

const PAGE = `<!doctype html><html><head><title>T</title><style>p { color: red }</style>
<script>var tracking = 1;</script></head><body><h1>Pickles</h1>
<p>See the <a href="https://example.com/recipes">recipes</a> <img src="jar.png" alt="a jar"></p>
</body></html>`;

const routes: Record<string, (response: ServerResponse) => void> = {
  "/page": (response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end(PAGE);
  },
  "/data.json": (response) => {
    response.writeHead(200, { "content-type": "application/json" });
    response.end('{"pickles": 3}');
  },
  "/latin1": (response) => {
    response.writeHead(200, { "content-type": "text/plain; charset=iso-8859-1" });
    response.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  },
  "/image.png": (response) => {
    response.writeHead(200, { "content-type": "image/png" });
    response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  },
  "/missing": (response) => {
    response.writeHead(404, { "content-type": "text/plain" });
    response.end("nope");
  },
  "/moved": (response) => {
    response.writeHead(302, { location: "/data.json" });
    response.end();
  },
  "/endless": (response) => {
    response.writeHead(200, { "content-type": "text/plain" });
    const chunk = "a".repeat(16 * 1024);
    const writeMore = () => {
      while (!response.destroyed && response.write(chunk)) {}
      if (!response.destroyed) response.once("drain", writeMore);
    };
    writeMore();
  },
  "/silent": () => {
    // Never answers: the tool's timeout has to end the request.
  },
};

let server: Server;
let base: string;
let temp: TempWorkspace;

beforeAll(async () => {
  temp = createTempWorkspace();
  server = createServer((request, response) => {
    const route = routes[request.url ?? ""];
    if (route) route(response);
    else response.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  temp.remove();
});

describe("web_fetch", () => {
  const webFetch = createWebFetchTool();

  it("turns HTML into text, keeping link URLs and skipping images and scripts", async () => {
    const text = await webFetch.run({ url: `${base}/page` }, temp.context());
    expect(text).toContain("PICKLES");
    expect(text).toContain("See the recipes [https://example.com/recipes]");
    expect(text).not.toContain("jar");
    expect(text).not.toContain("tracking");
    expect(text).not.toContain("<");
  });

  it("returns JSON as is, following redirects", async () => {
    expect(await webFetch.run({ url: `${base}/moved` }, temp.context())).toBe('{"pickles": 3}');
  });

  it("decodes the charset the server names", async () => {
    expect(await webFetch.run({ url: `${base}/latin1` }, temp.context())).toBe("café");
  });

  it("refuses binary content types", async () => {
    await expect(webFetch.run({ url: `${base}/image.png` }, temp.context())).rejects.toThrow(
      `${base}/image.png is image/png, which is not text; web_fetch returns HTML and text only`,
    );
  });

  it("reports a non-2xx answer with its status", async () => {
    await expect(webFetch.run({ url: `${base}/missing` }, temp.context())).rejects.toThrow(
      `${base}/missing answered HTTP 404 Not Found`,
    );
  });

  it("refuses URLs that are not http or https", async () => {
    await expect(webFetch.run({ url: "file:///etc/passwd" }, temp.context())).rejects.toThrow(
      'web_fetch only fetches http:// and https:// URLs, not file:// ("file:///etc/passwd")',
    );
    await expect(webFetch.run({ url: "example.com" }, temp.context())).rejects.toThrow(
      '"example.com" is not a valid URL; give a full http:// or https:// URL',
    );
  });

  it("stops reading at the size cap and says the text was cut", async () => {
    const capped = createWebFetchTool({ maxBytes: 100_000 });
    const text = await capped.run({ url: `${base}/endless` }, temp.context());
    expect(text).toBe(
      `${"a".repeat(100_000)}\n\n[truncated: only the first 100000 bytes of ${base}/endless were read]`,
    );
  });

  it("gives up on a server that does not answer within the timeout", async () => {
    const impatient = createWebFetchTool({ timeoutMs: 200 });
    await expect(impatient.run({ url: `${base}/silent` }, temp.context())).rejects.toThrow(
      `${base}/silent did not answer within 0.2 s`,
    );
  });

  it("stops when the job is aborted", async () => {
    const controller = new AbortController();
    const run = webFetch.run({ url: `${base}/silent` }, temp.context(controller.signal));
    controller.abort();
    await expect(run).rejects.toThrow(
      `fetching ${base}/silent was stopped because the job was aborted`,
    );
  });

  it("reports a server that cannot be reached", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise((resolve) => closed.close(resolve));
    await expect(webFetch.run({ url }, temp.context())).rejects.toThrow(
      new RegExp(`^could not fetch ${url.replaceAll(".", "\\.")}: .*ECONNREFUSED`),
    );
  });
});
