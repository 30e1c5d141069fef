// The roost.yaml the push tests and benches serve from the host (docs/pipelines.md): one pipeline
// built on a push to any branch, for Android.

/** A pipeline file with one pipeline `name`, at most `maxConcurrent` builds at once; `more` (indented keys) is added to the pipeline. */
export function pushPipelineFile(maxConcurrent: number, name = "ci", more = ""): string {
  return `version: 1
pipelines:
  ${name}:
    triggers:
      events: [push]
      branches: ["**"]
    concurrency:
      max_concurrent: ${maxConcurrent}
    platforms: [android]
${more}`;
}
