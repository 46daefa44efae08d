import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Who may read /metrics: anyone when METRICS_TOKEN is unset, else `Authorization: Bearer
 * <METRICS_TOKEN>`. Digests of equal length are compared in constant time, so the answer's
 * timing says nothing about the token.
 */
export function metricsAccess(token: string | undefined): (authorization: string | undefined) => boolean {
  if (token === undefined) return () => true;
  const expected = digest(token);
  return (authorization) => {
    const m = authorization === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return m !== null && timingSafeEqual(digest(m[1]!), expected);
  };
}
