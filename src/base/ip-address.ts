/**
 * What kind of network an IP address is on: public unicast, or loopback, private,
 * link-local (the cloud metadata address 169.254.169.254 among them), shared, multicast,
 * reserved or unspecified, in IPv4, IPv6 and IPv4-mapped IPv6. `web_fetch` refuses every
 * address that is not public; a model endpoint on a local one needs no key.
 */
import { BlockList, isIP } from "node:net";

/** Ranges that are not the public internet, each with the word the refusal uses. */
const BLOCKED_V4: [string, number, string][] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "shared (carrier NAT)"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];

const BLOCKED_V6: [string, number, string][] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::", 96, "IPv4-compatible"],
  ["64:ff9b:1::", 48, "local NAT64"],
  ["100::", 64, "discard"],
  ["fc00::", 7, "private"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];

const blockLists = new Map<string, BlockList>();
for (const [network, prefix, kind] of BLOCKED_V4)
  blockListOf(kind).addSubnet(network, prefix, "ipv4");
for (const [network, prefix, kind] of BLOCKED_V6)
  blockListOf(kind).addSubnet(network, prefix, "ipv6");

function blockListOf(kind: string): BlockList {
  let list = blockLists.get(kind);
  if (!list) {
    list = new BlockList();
    blockLists.set(kind, list);
  }
  return list;
}

/**
 * Why `address` (an IP literal) is not on the public internet ("loopback", "private"…),
 * or null when it is. An IPv4-mapped IPv6 address is judged as its IPv4 address.
 */
export function blockedAddressKind(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return "not an IP address";
  const mapped = family === 6 ? mappedIpv4(address) : null;
  const [ip, type] = mapped ? [mapped, "ipv4" as const] : [address, family === 4 ? "ipv4" : "ipv6"];
  for (const [kind, list] of blockLists) {
    if (list.check(ip, type as "ipv4" | "ipv6")) return kind;
  }
  return null;
}

/** The IPv4 address inside `::ffff:a.b.c.d` (in either notation), else null. */
function mappedIpv4(address: string): string | null {
  const groups = expandIpv6(address.toLowerCase());
  if (!groups || groups.slice(0, 5).some((group) => group !== 0) || groups[5] !== 0xffff) {
    return null;
  }
  const [high = 0, low = 0] = groups.slice(6);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 allowed). */
function expandIpv6(address: string): number[] | null {
  let text = address.replace(/%.*$/, "");
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (dotted) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted.split(".").map(Number);
    text = `${text.slice(0, -dotted.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  const zeros = 8 - front.length - back.length;
  if (zeros < 0 || (tail === undefined && zeros !== 0)) return null;
  return [...front, ...Array<number>(zeros).fill(0), ...back];
}
