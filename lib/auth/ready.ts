// A cross-cutting rule: the authentication endpoints answer 409 setup_incomplete
// until the instance is ready.
import type { Executor } from "../db/client.ts";
import { getInstance, type Instance } from "../setup/instance.ts";
import { fail } from "../http/errors.ts";

export async function requireReadyInstance(db: Executor): Promise<Instance> {
  const instance = await getInstance(db);
  if (instance.state !== "ready") fail("setup_incomplete", "Setup is not complete; finish it before signing in.");
  return instance;
}
