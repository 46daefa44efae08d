import { randomBytes } from 'node:crypto';

export const API_TOKEN_PREFIX = 'mas_';
/** How many characters of an API token the list shows, so a user can tell tokens apart. */
const SHOWN_PREFIX_LENGTH = API_TOKEN_PREFIX.length + 8;

export function newApiToken(): { token: string; prefix: string } {
  const token = API_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, prefix: token.slice(0, SHOWN_PREFIX_LENGTH) };
}

export const isApiToken = (bearer: string): boolean => bearer.startsWith(API_TOKEN_PREFIX);

export const newRefreshToken = (): string => 'rt_' + randomBytes(32).toString('base64url');
