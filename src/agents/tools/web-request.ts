/**
 * The network side of `web_fetch`: one GET that stays on the public internet.
 *
 *   URL ─► http(s)? ─► host in the agent's allow-list (if any)? ─► resolve the host once
 *       ─► every address public? ─► connect to that
 *   address (TLS still checks the host name) ─► 3xx? ─► the same again for Location (≤ 5)
 *
 * The host is resolved once per hop and the connection pinned to the checked address, so
 * a name that answers a public address to the check and a private one to the connect
 * (DNS rebinding) cannot get in between.
 */
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { Readable } from "node:stream";
import zlib from "node:zlib";
import { ToolError } from "../../base/errors.js";
import { bareHostname } from "../../base/host.js";
import { blockedAddressKind } from "../../base/ip-address.js";
import type { HostResolver, ResolvedAddress } from "./web-address.js";

/** How {@link getPublic} reaches hosts. */
export interface PublicRequestOptions {
  resolve: HostResolver;
  /**
   * Lets private, loopback and link-local addresses through: only for tests against
   * servers on 127.0.0.1, never a default. (Default: false)
   */
  allowPrivate: boolean;
  /** IP addresses let through although private (tests). (Default: none) */
  allowAddresses?: readonly string[];
  /**
   * Domains the agent may fetch from (AGENT.md `web_fetch.allow_domains`); each entry
   * admits itself and its subdomains. (Default: every public host)
   */
  allowDomains?: readonly string[];
  signal: AbortSignal;
}

/** An answer whose body has not been read yet. */
export interface PublicResponse {
  /** The URL that answered, after redirects. */
  url: URL;
  status: number;
  statusText: string;
  header(name: string): string | null;
  /** The body, decompressed. */
  body: Readable;
}

/** Redirects followed before the fetch is refused. */
export const MAX_REDIRECTS = 5;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** GETs `url`, following up to {@link MAX_REDIRECTS} redirects, each hop checked anew. */
export async function getPublic(url: URL, options: PublicRequestOptions): Promise<PublicResponse> {
  let current = url;
  for (let hop = 0; ; hop++) {
    checkedDomain(current, options.allowDomains);
    const address = await checkedAddress(current, options);
    const response = await request(current, address, options.signal);
    const location = response.headers.location;
    if (!REDIRECTS.has(response.statusCode ?? 0) || !location) {
      return toPublicResponse(current, response);
    }
    response.resume();
    if (hop === MAX_REDIRECTS) {
      throw new ToolError(`${url.href} redirected more than ${MAX_REDIRECTS} times; not followed`);
    }
    current = checkedScheme(new URL(location, current), url);
  }
}

/** `url` when it is http(s); a ToolError naming the scheme otherwise. */
export function checkedScheme(url: URL, original = url): URL {
  if (url.protocol === "http:" || url.protocol === "https:") return url;
  const via = url === original ? "" : ` (redirected from ${original.href})`;
  throw new ToolError(
    `web_fetch only fetches http:// and https:// URLs, not ${url.protocol}// ("${url.href}")${via}`,
  );
}

/** True when `hostname` is `domain` or one of its subdomains. */
export function inDomain(hostname: string, domain: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  const wanted = domain.toLowerCase().replace(/\.$/, "");
  return host === wanted || host.endsWith(`.${wanted}`);
}

/** Refuses a host outside the agent's allow-list, when it has one. */
function checkedDomain(url: URL, allowDomains: readonly string[] | undefined): void {
  if (!allowDomains || allowDomains.some((domain) => inDomain(url.hostname, domain))) return;
  throw new ToolError(
    `web_fetch refused ${url.href}: ${url.hostname} is not in this agent's web_fetch.allow_domains ` +
      `(${allowDomains.join(", ")})`,
  );
}

/** The address to connect to for `url`'s host, after checking every address it has. */
async function checkedAddress(url: URL, options: PublicRequestOptions): Promise<ResolvedAddress> {
  const host = bareHostname(url);
  const literal = isIP(host);
  const addresses =
    literal === 0 ? await options.resolve(host) : [{ address: host, family: literal as 4 | 6 }];
  const [first] = addresses;
  if (!first) throw new ToolError(`${url.host} has no address`);
  if (options.allowPrivate) return first;
  for (const { address } of addresses) {
    const kind = blockedAddressKind(address);
    if (kind === null || options.allowAddresses?.includes(address)) continue;
    const named = literal === 0 ? `${url.hostname} resolves to ${address}, which` : address;
    throw new ToolError(
      `web_fetch refused ${url.href}: ${named} is a ${kind} address, not the public ` +
        "internet; web_fetch reaches public web sites only",
      { context: { address } },
    );
  }
  return first;
}

/** Sends the GET to exactly `address`; the Host header and TLS name stay the URL's. */
function request(
  url: URL,
  address: ResolvedAddress,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) callback(null, [address]);
    else callback(null, address.address, address.family);
  };
  const client = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const outgoing = client.get(url, {
      lookup: pinned,
      signal,
      agent: false,
      headers: { "accept-encoding": "gzip, deflate, br", "user-agent": "picklebot web_fetch" },
    });
    outgoing.once("response", resolve);
    outgoing.once("error", reject);
  });
}

function toPublicResponse(url: URL, response: IncomingMessage): PublicResponse {
  const header = (name: string) => {
    const value = response.headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
  };
  return {
    url,
    status: response.statusCode ?? 0,
    statusText: response.statusMessage ?? "",
    header,
    body: decoded(response, header("content-encoding")),
  };
}

/** The body with its content encoding undone (the size cap counts decoded bytes). */
function decoded(body: IncomingMessage, encoding: string | null): Readable {
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? zlib.createGunzip()
      : encoding === "deflate"
        ? zlib.createInflate()
        : encoding === "br"
          ? zlib.createBrotliDecompress()
          : null;
  if (!decoder) return body;
  body.on("error", (error) => decoder.destroy(error));
  return body.pipe(decoder);
}
