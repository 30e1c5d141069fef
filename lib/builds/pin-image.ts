// A re-run runs the image its source ran (docs/runners.md "Executors"): when the source build ran
// in a container whose image the runner resolved to a digest, the re-run's frozen configuration
// names the image by that digest (repository@sha256:…), whatever its tag points at by now and
// whether the image came from the pipeline or from the runner's --image.
import type { Build } from "./store.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";

export function snapshotWithPinnedImage(source: Pick<Build, "config_snapshot" | "executor">): ConfigSnapshot {
  const digest = source.executor?.kind === "container" ? source.executor.image_digest : null;
  if (!digest || !/@sha256:[a-f0-9]{64}$/.test(digest)) return source.config_snapshot;
  return { ...source.config_snapshot, execution_config: { ...source.config_snapshot.execution_config, image: digest } };
}
