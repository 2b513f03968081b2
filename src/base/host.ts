/** Hosts in URLs: an IPv6 address goes in brackets there, and comes out without them. */

/** `host:port` as a URL writes it: an IPv6 address in brackets (`[::1]:8787`). */
export function hostPort(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** A URL's hostname without the brackets of an IPv6 address (`[::1]` → `::1`). */
export function bareHostname(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}
