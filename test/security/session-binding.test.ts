import t from 'tap';
import { SignJWT } from 'jose';
import { signUp, startTestService } from '../support/service.js';

/**
 * An access token is honoured only when its session belongs to the token's user and
 * company and has not expired. A token signed with the real key (a leaked JWT_SECRET, a bug
 * elsewhere) that pairs a real session id with another company's id, or another user's id,
 * must not act as that company or user: 401.
 */
let clock = Date.now();
const svc = await startTestService(t, 'sessbind', { now: () => clock });
const victim = await signUp(svc.api, 'Victim Co');
const attacker = await signUp(svc.api, 'Attacker Co');
const key = new TextEncoder().encode(svc.config.jwtSecret);
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string; sid: string; companyId: number };
const attackerClaims = claimsOf(attacker.token);

const mint = (claims: { sub: string; sid: string; companyId: number }) => {
  const iat = Math.floor(clock / 1000);
  return new SignJWT({ companyId: claims.companyId, sid: claims.sid, typ: 'access' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuer(svc.config.jwtIssuer)
    .setAudience(svc.config.jwtAudience)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 600)
    .sign(key);
};

t.test('baseline: a token minted with the session\'s own user and company works', async (t) => {
  const token = await mint(attackerClaims);
  t.equal((await svc.api('GET', '/api/auth/me', { token })).status, 200);
  t.equal((await svc.api('GET', '/api/agents', { token })).status, 200);
});

t.test('a real session id with another company\'s id is refused', async (t) => {
  const token = await mint({ ...attackerClaims, companyId: victim.companyId });
  for (const path of ['/api/auth/me', '/api/agents', '/api/billing']) {
    const res = await svc.api('GET', path, { token });
    t.equal(res.status, 401, `${path} → 401`);
    t.equal(res.body.error?.code, 'UNAUTHORIZED');
  }
  const created = await svc.api('POST', '/api/agents', { token, body: { name: 'planted' } });
  t.equal(created.status, 401, 'nothing is created in the victim company');
  const victimAgents = await svc.api('GET', '/api/agents', { token: victim.token });
  t.same(victimAgents.body.agents, [], 'the victim company has no planted agent');
});

t.test('a real session id with another user\'s id is refused', async (t) => {
  const token = await mint({ ...attackerClaims, sub: victim.userId, companyId: victim.companyId });
  t.equal((await svc.api('GET', '/api/auth/me', { token })).status, 401, 'other user and company');
  const sameCompanyOtherUser = await mint({ ...attackerClaims, sub: victim.userId });
  t.equal((await svc.api('GET', '/api/auth/me', { token: sameCompanyOtherUser })).status, 401, 'other user, own company');
  const notAUuid = await mint({ ...attackerClaims, sub: 'not-a-uuid' });
  t.equal((await svc.api('GET', '/api/auth/me', { token: notAUuid })).status, 401, 'a subject that is no user id at all (no 500)');
  for (const companyId of [1.5, 2 ** 40, -1]) {
    const odd = await mint({ ...attackerClaims, companyId });
    t.equal((await svc.api('GET', '/api/auth/me', { token: odd })).status, 401, `companyId ${companyId} (no 500)`);
  }
});

t.test('an expired session is refused even with a fresh access token', async (t) => {
  const s = await signUp(svc.api, 'Expiring Co');
  const claims = claimsOf(s.token);
  clock += (svc.config.refreshTokenTtlSeconds + 60) * 1000;
  t.teardown(() => {
    clock -= (svc.config.refreshTokenTtlSeconds + 60) * 1000;
  });
  const token = await mint(claims);
  t.equal((await svc.api('GET', '/api/auth/me', { token })).status, 401, 'the session outlived its expiry');
});
