import type { User, UserInvitation, UserRole } from '../../schema/entities.js';
import { EXAMPLE_TIME, ID, nullable, object, TIMESTAMP, UUID } from '../http/schemas.js';
import { bodyValidator } from '../http/validate.js';

/**
 * What the team routes (gateway/routes/users.ts, and accepting an invitation in
 * gateway/routes/auth.ts) accept and answer: bodies, views, their schemas and examples.
 */

export const ROLES: readonly UserRole[] = ['owner', 'admin', 'operator'];

/** A display name as stored: trimmed; blank or absent is none. */
const DISPLAY_NAME_FIELD = { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' } as const;
const EMAIL_FIELD = { type: 'string', format: 'email', maxLength: 254 } as const;

export const invitationBody = bodyValidator<{ email: string; role: UserRole; displayName?: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['email', 'role'],
  properties: { email: EMAIL_FIELD, role: { type: 'string', enum: ROLES }, displayName: DISPLAY_NAME_FIELD },
});

export const acceptBody = bodyValidator<{ token: string; password: string; displayName?: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['token', 'password'],
  properties: { token: { type: 'string', minLength: 1, maxLength: 512 }, password: { type: 'string', minLength: 8, maxLength: 1024 }, displayName: DISPLAY_NAME_FIELD },
});

/** `displayName: null` clears it. */
export const patchUserBody = bodyValidator<{ role?: UserRole; displayName?: string | null }>({
  type: 'object',
  additionalProperties: false,
  properties: { role: { type: 'string', enum: ROLES }, displayName: { ...DISPLAY_NAME_FIELD, type: ['string', 'null'] } },
});

export const trimmedName = (name: string | null | undefined): string | null => (typeof name === 'string' ? name.trim() : null);

export const userView = (u: User) => ({ id: u.id, email: u.email, role: u.role, displayName: u.displayName, createdAt: u.createdAt.toISOString() });

export const invitationView = (i: UserInvitation) => ({
  id: i.id, email: i.email, role: i.role, displayName: i.displayName, expiresAt: i.expiresAt.toISOString(), createdAt: i.createdAt.toISOString(),
});

export const ROLE = { type: 'string', enum: ROLES, description: '`owner` (everything, owners included), `admin` (everything but owners), `operator` (conversations, leads, canned replies).' };
const EMAIL = { type: 'string', format: 'email' };
export const DISPLAY_NAME = { ...nullable({ type: 'string' }), description: 'How teammates and customers see the user (null: their email).' };

export const USER = object({ id: UUID, email: EMAIL, role: ROLE, displayName: DISPLAY_NAME, createdAt: TIMESTAMP }, { title: 'TeamUser' });
const INVITATION_PROPERTIES = { id: ID, email: EMAIL, role: ROLE, displayName: DISPLAY_NAME, expiresAt: TIMESTAMP, createdAt: TIMESTAMP };
export const INVITATION = object(INVITATION_PROPERTIES, { title: 'Invitation' });
export const NEW_INVITATION = object({
  ...INVITATION_PROPERTIES,
  token: { type: 'string', pattern: '^inv_', description: 'Shown in this answer only (stored as a hash); good once, for 7 days.' },
  url: { type: 'string', format: 'uri', description: 'PUBLIC_BASE_URL/#/accept?token=…: the dashboard page where the invitee picks a password.' },
});
/** What accepting an invitation answers: the new user and their company. */
export const ACCEPTED = object({ user: object({ id: UUID, email: EMAIL, role: ROLE, displayName: DISPLAY_NAME }), company: object({ id: ID, companyId: UUID, companyName: { type: 'string' } }) });

export const EXAMPLE_TEAM_USER = { id: '0b6e7f3a-2c1d-4e5f-8a9b-0c1d2e3f4a5b', email: 'bo@example.com', role: 'operator', displayName: 'Bo', createdAt: EXAMPLE_TIME };
export const EXAMPLE_INVITATION = { id: 1, email: 'bo@example.com', role: 'operator', displayName: 'Bo', expiresAt: '2026-03-08T10:00:00.000Z', createdAt: EXAMPLE_TIME };
export const EXAMPLE_INVITATION_TOKEN = 'inv_Q2hhbmdlIG1lOiB0aGlzIGlzIGFuIGV4YW1wbGUgdG9rZW4';
export const EXAMPLE_ACCEPTED = {
  user: { id: EXAMPLE_TEAM_USER.id, email: 'bo@example.com', role: 'operator', displayName: 'Bo' },
  company: { id: 1, companyId: 'a7e9c1b3-5d2f-4e6a-8b0c-9d1e2f3a4b5c', companyName: 'Acme' },
};
