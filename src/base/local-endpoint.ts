/**
 * Whether a model endpoint runs on this machine or the local network (Ollama, LM Studio,
 * vLLM, llama.cpp's server): such an endpoint needs no API key and its model is free.
 */
import { blockedAddressKind } from "./ip-address.js";

/**
 * True when `baseUrl`'s host is `localhost` (or a name under `.localhost` or `.local`) or
 * an IP address of this machine or its network (loopback, private, link-local, and the
 * carrier-NAT range that VPNs such as Tailscale use).
 */
export function isLocalEndpoint(baseUrl: string): boolean {
  let host: string;
  try {
    host = new URL(baseUrl).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local")) return true;
  const ip = host.replace(/^\[(.*)\]$/, "$1");
  return LOCAL_KINDS.has(blockedAddressKind(ip) ?? "public");
}

/** The address kinds of {@link blockedAddressKind} that are this machine or its network. */
const LOCAL_KINDS = new Set([
  "loopback",
  "private",
  "link-local",
  "site-local",
  "shared (carrier NAT)",
  "unspecified",
]);
