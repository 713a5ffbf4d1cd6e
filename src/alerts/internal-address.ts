import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Addresses a destination may not point at unless ALERT_PRIVATE_URLS allows it: loopback,
 * private, link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, unspecified,
 * multicast and reserved ranges. Otherwise a project's admin could make the service POST into
 * its own network and read the start of each answer in the delivery log.
 */
const internal = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 3],
] as const) {
  internal.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  internal.addSubnet(network, prefix, "ipv6");
}

export function isInternalAddress(address: string): boolean {
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is checked as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return internal.check(mapped, "ipv4");
  const family = isIP(address);
  return family === 0 || internal.check(address, family === 4 ? "ipv4" : "ipv6");
}

/**
 * Why `url` may not be sent to, or undefined when it may: its host is, or resolves to, an internal
 * address. A host that does not resolve passes here (sending to it fails on its own); each attempt
 * checks again, so a name that later resolves inward is refused then.
 */
export async function internalUrlReason(url: string): Promise<string | undefined> {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return undefined;
  }
  const inward = addresses.find(isInternalAddress);
  if (inward === undefined) return undefined;
  return `${inward === host ? host : `${host} (${inward})`} is an internal address; ALERT_PRIVATE_URLS=true allows it`;
}
