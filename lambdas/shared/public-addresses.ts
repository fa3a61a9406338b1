import ipaddr from 'ipaddr.js';
import { isIP } from 'node:net';

// IANA's global unicast space: every other IPv6 address is special (IPv4-compatible ::a.b.c.d,
// discard-only 100::/64, NAT64 64:ff9b::/96 are all below it). ipaddr.js's ranges then take out the
// special blocks inside it: 6to4 (2002::/16) and Teredo (2001::/32) embed an IPv4 address that may
// be private, and benchmarking, documentation, ORCHID, AMT, AS112 and 3fff::/20 are nobody's host.
// https://www.iana.org/assignments/iana-ipv6-special-registry/
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * Whether an IP address (IPv4, or IPv6 without brackets) is on the public Internet: an IPv4
 * address outside IANA's special-purpose blocks (this network, private, shared/CGNAT, loopback,
 * link-local with the instance metadata at 169.254.169.254, IETF, documentation, benchmarking,
 * 6to4 relay, AS112, AMT, multicast, reserved, broadcast: ipaddr.js's `unicast` range); an IPv6
 * address in 2000::/3 outside its special blocks; an IPv4-mapped address (::ffff:a.b.c.d) by its
 * IPv4 address. Anything that is not an IP address is not one.
 */
export const isPublicAddress = (address: string): boolean => {
  const version = isIP(address);
  if (version === 4) return ipaddr.IPv4.parse(address).range() === 'unicast';
  // A zone (`fe80::1%eth0`) is only ever link-local.
  if (version !== 6 || address.includes('%')) return false;
  // In WHATWG's canonical form first (hex groups): ipaddr.js reads `::a.b.c.d` (IPv4-compatible, as
  // getaddrinfo may print ::a0b:c0d) as the IPv4-mapped ::ffff:a.b.c.d, and would judge it by its IPv4 address.
  const v6 = ipaddr.IPv6.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1));
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === 'unicast';
  return v6.match(GLOBAL_UNICAST) && v6.range() === 'unicast';
};

/** Whether an IP address is one a webhook may not reach from the cloud: any IP address that is not public. */
export const isPrivateAddress = (address: string) => isIP(address) !== 0 && !isPublicAddress(address);

// Names that only ever mean this machine or a private network (RFC 6761, 6762, 8375, ICANN's .internal).
const PRIVATE_NAMES = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/i;

/** What a URL's `hostname` names: brackets of an IPv6 literal and a fully qualified name's trailing dots dropped. */
export const hostOf = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.+$/, '');

/**
 * Whether a URL's host (`URL.hostname`: a name, an IPv4 address, or a bracketed IPv6 address) may
 * not be reached from the cloud: a non-public IP address, a name of this machine or a private
 * network (`localhost`, `*.local`, `*.internal`, …, with or without the trailing dot of a fully
 * qualified name), or a single-label name (resolved through the host's search domains). A public
 * name may still resolve to a private address: the delivery's DNS lookup checks each answer.
 */
export const isPrivateHost = (hostname: string) => {
  const host = hostOf(hostname);
  if (isIP(host)) return !isPublicAddress(host);
  return PRIVATE_NAMES.test(host) || !host.includes('.');
};
