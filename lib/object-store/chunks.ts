// Reading an upload chunk by chunk, counted against its limit and hashed as it goes.
import { sha256Stream } from "../crypto/hash.ts";
import { fail } from "../http/errors.ts";

/** Hands each chunk of `body` to `write` in order; 413 payload_too_large as soon as more than maxBytes arrived. */
export async function eachChunk(
  body: ReadableStream<Uint8Array> | Uint8Array | null,
  o: { maxBytes: number; tooLarge: string },
  write: (chunk: Uint8Array) => Promise<void> | void,
): Promise<{ size: number; sha256: string }> {
  const hash = sha256Stream();
  let size = 0;
  const take = async (chunk: Uint8Array) => {
    size += chunk.byteLength;
    if (size > o.maxBytes) fail("payload_too_large", o.tooLarge);
    hash.update(chunk);
    await write(chunk);
  };
  if (body instanceof Uint8Array) {
    await take(body);
  } else if (body) {
    // A reader, not `for await`: the DOM typings the web app's type check also reads this file with
    // do not make a ReadableStream async-iterable.
    const reader = body.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) await take(next.value);
  }
  return { size, sha256: hash.hex() };
}
