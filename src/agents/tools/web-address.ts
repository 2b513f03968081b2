/**
 * How `web_fetch` resolves a host name to the addresses it checks: it may connect to
 * public unicast ones only (src/base/ip-address.ts tells the kinds apart).
 */
import { lookup } from "node:dns/promises";

/** One address a host name resolved to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has. (Default: the system resolver) */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (`getaddrinfo`, as every other program of the host uses). */
export const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family: family === 6 ? 6 : 4,
  }));
