/**
 * The progress line on stderr: rewritten in place on a terminal, otherwise one line at
 * most every few seconds (logs and CI stay readable). Results go to stdout, never here.
 */
const tty = Boolean(process.stderr.isTTY);
let lastLine = '';
let lastPrinted = 0;
const started = Date.now();

const stamp = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s`;

/** A transient status line (throttled when stderr is not a terminal). */
export function progress(section: string, text: string): void {
  const line = `${stamp()} [${section}] ${text}`;
  if (tty) {
    process.stderr.write(`\r\x1b[K${line.slice(0, (process.stderr.columns ?? 120) - 1)}`);
    lastLine = line;
    return;
  }
  const now = Date.now();
  if (now - lastPrinted < 3000) return;
  lastPrinted = now;
  process.stderr.write(`${line}\n`);
}

/** A line that stays (a step started or finished). */
export function note(section: string, text: string): void {
  const line = `${stamp()} [${section}] ${text}`;
  if (tty && lastLine) process.stderr.write('\r\x1b[K');
  lastLine = '';
  lastPrinted = Date.now();
  process.stderr.write(`${line}\n`);
}
