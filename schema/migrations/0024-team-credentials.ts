import { Migration } from '@mikro-orm/migrations';

/**
 * What a teammate made lives only while they stay on the team with their role (contract.md
 * § Tools that cannot be turned against us, "Users"; gateway/auth/team-lock.ts). From now on
 * a removal or a lowered role revokes it at once; this revokes what earlier ones left behind:
 * - live API tokens without a maker (every token is made with a session, so its maker was
 *   removed: the foreign key set `created_by` null), and those whose maker is an operator now
 *   (operators make no tokens: they were demoted);
 * - open invitations whose sender is gone, is an operator now, or is no owner any more for an
 *   invitation of an owner, and those sent with an API token (`created_by` null: whose maker
 *   was not recorded then, so whose removal could not revoke them). They are deleted, as a
 *   revoked invitation is; an owner or admin sends a new one in one click.
 * An owner made admin earlier keeps their tokens: nothing tells them from an admin's.
 * `api_tokens(created_by)` is indexed: the revocation at each removal or demotion, and the
 * foreign key's `set null` when a user goes, find their tokens by it.
 */
export class Migration0024TeamCredentials extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create index api_tokens_created_by_idx on api_tokens(created_by);

      update api_tokens t set revoked_at = now()
      where revoked_at is null
        and (created_by is null or exists (select 1 from users u where u.id = t.created_by and u.role = 'operator'));

      delete from user_invitations i
      where accepted_at is null
        and (
          created_by is null
          or not exists (
            select 1 from users u
            where u.id = i.created_by and u.company_id = i.company_id and u.role <> 'operator' and (i.role <> 'owner' or u.role = 'owner')
          )
        );
    `);
  }
}
