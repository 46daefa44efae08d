/** True when `work` settles successfully within `timeoutMs`; false on failure or timeout. */
export async function succeedsWithin(work: () => Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([work().then(() => true), deadline]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** `work`'s result, or a rejection (`timedOut()`'s error) once `timeoutMs` passed first. */
export function withinDeadline<T>(work: Promise<T>, timeoutMs: number, timedOut: () => Error = () => new Error(`no answer within ${timeoutMs} ms`)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), timeoutMs);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
