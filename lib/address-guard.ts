import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { OutboundError } from './outbound-errors.js';

/**
 * Which network addresses a tenant-supplied URL may reach (contract.md § Knowledge: every
 * tenant-supplied URL refuses loopback, private, link-local and metadata addresses after DNS
 * resolution). The check runs on the address a connection is actually made to (a `lookup`
 * for node:http, see lib/outbound-http.ts), so a host name that resolves differently later
 * (DNS rebinding) is caught at connect time too; IP literals are checked before connecting
 * (URL parsing already turned numeric forms such as `2130706433` or `0x7f.1` into dotted ones).
 */

/** True when a connection to `address` (an IPv4 or IPv6 literal) may be made. */
export interface AddressGuard {
  (address: string): boolean;
  /**
   * Origins the guard does not apply to (the operator's own helpdesk instances): a request to
   * one of them may reach any address. The exemption is decided per request, on that
   * request's own URL, so a redirect from a trusted origin to anywhere else is guarded.
   */
  readonly exempt?: ReadonlySet<string>;
}

/** The guard of one request to `url` (one hop of a redirect chain): null when any address may be reached. */
export function guardOf(guard: AddressGuard | null | undefined, url: URL): AddressGuard | null {
  return guard && !guard.exempt?.has(url.origin) ? guard : null;
}

interface Range {
  base: bigint;
  bits: number;
}

const v4 = (cidr: string): Range => {
  const [ip, bits] = cidr.split('/');
  return { base: ipv4ToBigInt(ip!), bits: Number(bits) };
};
const v6 = (cidr: string): Range => {
  const [ip, bits] = cidr.split('/');
  return { base: ipv6ToBigInt(ip!)!, bits: Number(bits) };
};

/** Not reachable from the public internet, or special-purpose (IANA registries). */
const BLOCKED_V4: Range[] = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
].map(v4);

const BLOCKED_V6: Range[] = [
  '::/128', '::1/128', '64:ff9b:1::/48', '100::/64', '2001::/23', '2001:db8::/32', 'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8',
].map(v6);

/**
 * IPv6 ranges that carry an IPv4 address in their low 32 bits, judged by that address:
 * IPv4-mapped, IPv4-translated (RFC 2765, `::ffff:0:a.b.c.d`), IPv4-compatible, and NAT64's
 * well-known prefix (its local-use 64:ff9b:1::/48 is refused whole, above).
 */
const EMBEDS_V4_LOW: Range[] = ['::ffff:0:0/96', '::ffff:0:0:0/96', '::/96', '64:ff9b::/96'].map(v6);
/** 6to4 carries its IPv4 address in bits 16–48. */
const SIX_TO_FOUR = v6('2002::/16');

function inRange(value: bigint, range: Range, width: number): boolean {
  const shift = BigInt(width - range.bits);
  return value >> shift === range.base >> shift;
}

function ipv4ToBigInt(ip: string): bigint {
  return ip.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part) & 255), 0n);
}

function ipv6ToBigInt(ip: string): bigint | null {
  let text = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  // A trailing dotted IPv4 part (::ffff:1.2.3.4) becomes two hex groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = ipv4ToBigInt(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
  let n = 0n;
  for (const g of groups) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  return n;
}

function isPublicV4(n: bigint): boolean {
  return !BLOCKED_V4.some((r) => inRange(n, r, 32));
}

/** True for an address on the public internet; false for loopback, private, link-local, metadata, reserved ones. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const kind = isIP(bare.replace(/%.*$/, ''));
  if (kind === 4) return isPublicV4(ipv4ToBigInt(bare));
  if (kind !== 6) return false;
  const n = ipv6ToBigInt(bare);
  if (n === null) return false;
  if (EMBEDS_V4_LOW.some((r) => inRange(n, r, 128))) return isPublicV4(n & 0xffffffffn);
  if (inRange(n, SIX_TO_FOUR, 128)) return isPublicV4((n >> 80n) & 0xffffffffn);
  return !BLOCKED_V6.some((r) => inRange(n, r, 128));
}

/** The guard of tenant-supplied URLs: public addresses only. */
export const publicAddressesOnly: AddressGuard = isPublicAddress;

/** Refused by an AddressGuard: the URL's host is (or resolves to) an address it may not reach (code BLOCKED_ADDRESS). */
export class BlockedAddressError extends OutboundError {
  constructor(readonly host: string) {
    super('BLOCKED_ADDRESS', `${host} is a private, loopback, link-local or otherwise internal address`);
    this.name = 'BlockedAddressError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for node:http / node:net that resolves like dns.lookup and refuses the host
 * when any of its addresses is refused by the guard (a name with one internal answer among
 * public ones is not trusted either). Answers both call forms (`all: true` is what node uses
 * with autoSelectFamily).
 */
export function guardedLookup(guard: AddressGuard) {
  return (hostname: string, options: { all?: boolean; family?: number | string; hints?: number }, callback: LookupCallback): void => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : typeof options.family === 'number' ? options.family : 0;
    dnsLookup(hostname, { all: true, family, hints: options.hints }, (err, addresses) => {
      if (err) return callback(err, options.all ? [] : '', undefined);
      if (addresses.length === 0 || addresses.some((a) => !guard(a.address))) {
        return callback(Object.assign(new BlockedAddressError(hostname), { errno: undefined }) as NodeJS.ErrnoException, options.all ? [] : '', undefined);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '');

/**
 * Checks a URL a tenant is about to store (an integration's apiUrl, an agent's baseUrl):
 * its host, resolved, must pass the guard (a host that does not resolve passes for now). Answers `{ok:false, error}` instead of throwing.
 * The same guard applies again at every connection (this only gives the user an early,
 * clear answer).
 */
export async function checkUrlHost(raw: string, requested: AddressGuard, timeoutMs = 3000): Promise<{ ok: true } | { ok: false; error: string }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, error: 'is not a valid URL' };
  }
  const guard = guardOf(requested, url);
  if (!guard) return { ok: true };
  const host = hostOf(url);
  if (isIP(host)) return guard(host) ? { ok: true } : { ok: false, error: 'points to a private, loopback, link-local or otherwise internal address' };
  // A host that does not resolve (yet) is accepted: it can only be reached once it does, and
  // then through the same guard.
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ok: true }), timeoutMs);
    guardedLookup(guard)(host, { all: true }, (err) => {
      clearTimeout(timer);
      if (err instanceof BlockedAddressError) resolve({ ok: false, error: 'resolves to a private, loopback, link-local or otherwise internal address' });
      else resolve({ ok: true });
    });
  });
}

/** The origin of `url`, or null when it does not parse. */
function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/**
 * The address rules of the requests made for `url`, redirects included: null (any address)
 * when ALLOW_PRIVATE_URLS is on; else public addresses only. A URL at one of the operator's
 * own helpdesk instances (HELPDESK_GLOBAL_URL / HELPDESK_EUROPE_URL), which may be private,
 * gets a guard that exempts those origins, and only them: the exemption is an origin's, not
 * a chain's, so a trusted instance that redirects elsewhere (an open redirect on it, a
 * compromised one) leads only where a tenant's URL may lead.
 */
export function guardForUrl(
  config: { allowPrivateUrls: boolean; helpdeskGlobalUrl: string; helpdeskEuropeUrl: string },
  url: string,
): AddressGuard | null {
  if (config.allowPrivateUrls) return null;
  const trusted = [originOf(config.helpdeskGlobalUrl), originOf(config.helpdeskEuropeUrl)].filter((o): o is string => o !== null);
  const origin = originOf(url);
  if (origin === null || !trusted.includes(origin)) return publicAddressesOnly;
  return Object.assign((address: string) => publicAddressesOnly(address), { exempt: new Set(trusted) });
}
