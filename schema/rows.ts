/**
 * The shape of an entity's row as plain SQL returns it (the worker's hot path reads and
 * writes with `pg`, not the ORM): the same fields, snake_case column names. Row types are
 * derived from the entities (schema/*-entities.ts) so the two cannot drift apart.
 */
type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : S;

export type Row<E> = { [K in keyof E as K extends string ? SnakeCase<K> : never]: E[K] };
