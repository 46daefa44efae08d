import type { Test } from 'tap';
import { startShopSite } from '../../scripts/sandbox/shop-site.js';

/** The demo's shop page (scripts/sandbox/shop-site.ts) embedding `gatewayUrl`'s widget, closed at the test's end. */
export async function startSite(t: Test, gatewayUrl: string, integrationId: () => number): Promise<string> {
  const site = await startShopSite({ gatewayUrl, integrationId });
  t.teardown(site.close);
  return site.url;
}
