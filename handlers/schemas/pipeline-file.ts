// GET /v1/schemas/pipeline-file.json (public): the JSON Schema of the pipeline file (roost.yaml,
// docs/pipelines.md), generated from the zod schema Roost validates the file with, so an editor
// (e.g. the YAML language server's `# yaml-language-server: $schema=<url>`) completes and checks it.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { pipelineFileJsonSchema } from "../../lib/pipelines/file.ts";

export const endpoint = defineEndpoint({
  operationId: "get_pipeline_file_schema",
  summary: "The JSON Schema of the pipeline file (roost.yaml)",
  response: z.record(z.string(), z.unknown()),
  async handle() {
    return pipelineFileJsonSchema();
  },
});
