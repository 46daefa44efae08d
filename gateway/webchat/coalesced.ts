/**
 * One kind of lookup, asked by many sockets, answered by one statement for many keys: while
 * `inFlight` statements run, the lookups asked meanwhile wait and go out together in the
 * next one (up to `maxKeys`). A lone lookup goes out at once (no timer, no added latency);
 * under a crowd, one round trip answers hundreds.
 */
export class Coalesced<Key, Value> {
  readonly #read: (keys: Key[]) => Promise<Value[]>;
  readonly #maxKeys: number;
  readonly #inFlight: number;
  #waiting: { key: Key; resolve: (value: Value) => void; reject: (err: unknown) => void }[] = [];
  #running = 0;

  /** `read` answers one value per key, in the keys' order. */
  constructor(read: (keys: Key[]) => Promise<Value[]>, options: { maxKeys: number; inFlight: number }) {
    this.#read = read;
    this.#maxKeys = options.maxKeys;
    this.#inFlight = options.inFlight;
  }

  get(key: Key): Promise<Value> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ key, resolve, reject });
      this.#next();
    });
  }

  #next(): void {
    while (this.#running < this.#inFlight && this.#waiting.length > 0) {
      const batch = this.#waiting.length <= this.#maxKeys ? this.#waiting : this.#waiting.slice(0, this.#maxKeys);
      this.#waiting = batch === this.#waiting ? [] : this.#waiting.slice(this.#maxKeys);
      this.#running++;
      this.#read(batch.map((w) => w.key))
        .then(
          (values) => batch.forEach((w, i) => w.resolve(values[i]!)),
          (err: unknown) => batch.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          this.#running--;
          this.#next();
        });
    }
  }
}
