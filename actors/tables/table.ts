/**
 * A table as the worker writes it: its columns once, with their PostgreSQL types, and the
 * SQL fragments every statement of its owner module is built from. Rows travel as one JSON
 * parameter (`json_to_recordset`): V8 serialises a batch natively, and a row object may carry
 * more fields than the columns (they are ignored), so the worker's rows, snake_case like the
 * columns (schema/rows.ts), are sent as they are. Rows read back as JSON (from a
 * data-modifying CTE) get their timestamps turned into Dates by `fromJson`.
 */
/** `text[]`: a column the worker reads but never writes from JSON (a JSON array is not a `text[]` literal); `uuid` columns take a JSON string. */
export type SqlType = 'int' | 'bigint' | 'text' | 'uuid' | 'text[]' | 'jsonb' | 'real' | 'boolean' | 'timestamptz';

export class Table<C extends string> {
  readonly name: string;
  readonly columns: Readonly<Record<C, SqlType>>;
  readonly #names: C[];
  readonly #timestamps: C[];

  constructor(name: string, columns: Record<C, SqlType>) {
    this.name = name;
    this.columns = Object.freeze({ ...columns });
    this.#names = Object.keys(columns) as C[];
    this.#timestamps = this.#names.filter((c) => columns[c] === 'timestamptz');
  }

  /** `a, b, c` (optionally `v.a, v.b, v.c`), in column order; `only` picks some. */
  list(prefix = '', only: readonly C[] = this.#names): string {
    return only.map((c) => `${prefix}${c}`).join(', ');
  }

  /** `json_to_recordset(<param>::json) as <alias>(a int, b text, …)`: the rows of a JSON parameter (`extra`: more fields they carry, `name type, …`). */
  recordset(param: string, alias = 'v', only: readonly C[] = this.#names, extra = ''): string {
    return `json_to_recordset(${param}::json) as ${alias}(${[...only.map((c) => `${c} ${this.columns[c]}`), ...(extra ? [extra] : [])].join(', ')})`;
  }

  /** `a = v.a, b = v.b`: an update's assignments from a recordset alias. */
  assignments(only: readonly C[], alias = 'v'): string {
    return only.map((c) => `${c} = ${alias}.${c}`).join(', ');
  }

  /** A row read back as JSON, its timestamps as Dates (in place). */
  fromJson<R extends object>(row: R): R {
    const r = row as Record<string, unknown>;
    for (const c of this.#timestamps) if (typeof r[c] === 'string') r[c] = new Date(r[c] as string);
    return row;
  }
}
