// The publish half of the runner protocol (docs/runners.md "Protocol", docs/publishing.md): what
// a runner receives when it claims a deployment, and what it sends back. Both programs import
// these schemas, as they do lib/runners/protocol-wire.ts.
import { z } from "zod";

/** A file the publish sends (role binary or asset) or reads (notes), with the SHA-256 the runner checks. */
export const DeploymentArtifact = z.object({
  id: z.string(),
  path: z.string(),
  sha256: z.string(),
  size: z.number().int(),
  role: z.enum(["binary", "asset", "notes"]).describe("binary: what is uploaded to the store; asset: attached to a release; notes: the release notes file"),
});
export type DeploymentArtifact = z.output<typeof DeploymentArtifact>;

/** What the store or host answered, as the runner reports it. */
export const StoreAnswer = z
  .object({
    summary: z.string().max(1000).describe("one sentence: what the store now has"),
    version: z
      .string()
      .max(200)
      .nullable()
      .default(null)
      .describe("the version the store knows the upload by: a Play version code, an App Store build number, a Firebase release's display version, a tag"),
    url: z.string().max(2000).nullable().default(null).describe("where to see it (a release page, a Firebase console link)"),
    details: z.record(z.string(), z.unknown()).default({}).describe("the store's own identifiers (edit id, release name, build id)"),
  })
  .strict();
export type StoreAnswer = z.output<typeof StoreAnswer>;

/** A secret of the deployment's environment, revealed for this run only: a value, or a file's bytes. */
export const PublishSecret = z.object({
  key: z.string(),
  value: z.string().describe("the value; for a file secret, its bytes in base64"),
  file: z.boolean(),
});
export type PublishSecret = z.output<typeof PublishSecret>;

export const ClaimedPublish = z.object({
  deployment_id: z.string(),
  lease_seconds: z.number().int(),
  heartbeat_seconds: z.number().int(),
  next_line: z.number().int(),
  step: z.string().describe("the log step its lines are shown under: publish:<publisher>"),
  environment: z.string(),
  build: z.object({
    id: z.string(),
    build_number: z.number().int(),
    project_id: z.string(),
    branch: z.string(),
    commit_sha: z.string(),
    trigger_event: z.string(),
    tag: z.string().nullable().describe("the tag a tag build is of"),
  }),
  publisher: z.looseObject({ type: z.string(), environment: z.string() }).describe("the publisher's configuration (lib/publishing/publishers.ts), as frozen"),
  artifacts: z.array(DeploymentArtifact).describe("download each by id from this deployment's artifact endpoint; its SHA-256 must match"),
  release_notes: z.record(z.string(), z.string()),
  secrets: z.array(PublishSecret).describe("the environment's secrets this publisher names, and only those"),
  missing_secrets: z.array(z.string()).describe("secrets the publisher names that the environment does not have (or does not give this build)"),
});
export type ClaimedPublish = z.output<typeof ClaimedPublish>;

// POST /v1/runners/{runner_id}/deployments/{deployment_id}/heartbeat
export const PublishHeartbeatAnswer = z.object({
  status: z.string().describe("running, or what the deployment became (stop working on it)"),
  lease_seconds: z.number().int(),
});

// POST /v1/runners/{runner_id}/deployments/{deployment_id}/finish
export const PublishFinishRequest = z
  .object({
    status: z.enum(["succeeded", "failed"]),
    failure_reason: z.string().max(1000).optional(),
    store_answer: StoreAnswer.optional(),
    line_count: z.number().int().min(0).describe("how many log lines the publish produced in all"),
  })
  .strict();
export type PublishFinishRequest = z.input<typeof PublishFinishRequest>;
