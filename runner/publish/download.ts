// The files a publish sends, downloaded from the daemon by the deployment (docs/publishing.md
// "The same bytes"): streamed to a private file while hashed, and refused unless their SHA-256 is
// the one the deployment recorded when the build uploaded them. A promotion a month later sends
// exactly the bytes the build made, or nothing.
import { createWriteStream } from "node:fs";
import { join } from "node:path";
import type { RunnerApi } from "../client.ts";
import type { ClaimedPublish, DeploymentArtifact } from "../../lib/publishing/wire.ts";
import { PublishFailure, type LocalArtifact } from "./context.ts";

const ATTEMPTS = 4;

export async function downloadArtifact(
  api: RunnerApi,
  publish: ClaimedPublish,
  artifact: DeploymentArtifact,
  dir: string,
  signal: AbortSignal,
): Promise<LocalArtifact> {
  const { url, headers } = api.artifactRequest(publish, artifact.id);
  const file = join(
    dir,
    `${artifact.id}-${artifact.path
      .split("/")
      .pop()!
      .replace(/[^\w.-]/g, "_")}`,
  );
  let lastProblem = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    let response: Response;
    try {
      response = await fetch(url, { headers, signal: AbortSignal.any([signal, AbortSignal.timeout(30 * 60_000)]) });
    } catch (error) {
      if (signal.aborted) throw error;
      lastProblem = (error as Error).message;
      await Bun.sleep(500 * attempt);
      continue;
    }
    if (response.status >= 500) {
      lastProblem = `HTTP ${response.status}`;
      await Bun.sleep(500 * attempt);
      continue;
    }
    if (!response.ok || !response.body)
      throw new PublishFailure(`${artifact.path} could not be downloaded from Roost: ${response.status} ${(await response.text()).slice(0, 200)}`);
    const hasher = new Bun.CryptoHasher("sha256");
    const out = createWriteStream(file, { mode: 0o600 });
    let size = 0;
    for await (const chunk of response.body) {
      hasher.update(chunk);
      size += chunk.byteLength;
      if (!out.write(chunk)) await new Promise((resolve) => out.once("drain", resolve));
    }
    await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
    const sha = hasher.digest("hex");
    if (sha !== artifact.sha256 || size !== artifact.size)
      throw new PublishFailure(
        `${artifact.path} is not the file the build made: its SHA-256 is ${sha} (${size} bytes), the build recorded ${artifact.sha256} (${artifact.size} bytes); nothing was published`,
      );
    return { ...artifact, file };
  }
  throw new PublishFailure(`${artifact.path} could not be downloaded from Roost: ${lastProblem}`);
}
