// Waiting for something asynchronous to happen: read it again until it holds, within a deadline,
// instead of sleeping a fixed time and hoping it happened (a loaded CI host runs everything late).

/** Reads until `done` holds of what it read, which it answers; an error naming `what` and the last value when `timeoutMs` passes. */
export async function pollUntil<T>(what: string, read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen: ${JSON.stringify(value)}`);
    await Bun.sleep(intervalMs);
  }
}
