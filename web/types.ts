// The API's shapes, taken from the daemon's own zod schemas as types only: nothing of zod or the
// handlers is bundled, and a change of a schema is a type error here, not a silent drift.
import type { z } from "zod";
import type { BuildResource, StepResult } from "../lib/builds/wire.ts";
import type { IncidentResource } from "../lib/daemon/incident-wire.ts";
import type { IntegrationResource, RepositoryResource } from "../lib/integrations/wire.ts";
import type { MemberResource, ProjectResource } from "../lib/projects/wire.ts";
import type { PipelineResource } from "../lib/pipelines/wire.ts";
import type { ApiToken, ApiTokenCreated, SessionResult, UserResource } from "../lib/schemas/shared.ts";
import type { SetupStatus as SetupStatusSchema } from "../handlers/setup/status.ts";
import type { RunnerResource } from "../lib/runners/wire.ts";
import type { ArtifactResource } from "../lib/runners/protocol-wire.ts";
import type { DeliveryResource } from "../lib/webhooks/wire.ts";
import type { PublicOidcSettings } from "../lib/auth/oidc.ts";
import type { PublicTrustedProxySettings } from "../lib/auth/trusted-proxy.ts";
import type { MeResult } from "../handlers/users/me.ts";
import type { PipelineFileResult } from "../handlers/projects/pipeline-file.ts";
import type { CurrentVersion, DeploymentResource } from "../lib/publishing/deployments.ts";
import type { EnvironmentResource } from "../lib/publishing/environments.ts";
import type {
  Annotation,
  BuildListItem,
  BuildTestsAnswer,
  CoverageAnswer,
  HistoryEntry,
  TestCaseResource,
  TestResource,
  TestSummary,
  TrendPoint,
} from "../lib/test-results/schema.ts";

export type Build = z.infer<typeof BuildResource>;
export type BuildStatus = Build["status"];
export type Step = z.infer<typeof StepResult>;
export type Project = z.infer<typeof ProjectResource>;
export type Pipeline = z.infer<typeof PipelineResource>;
export type Repository = z.infer<typeof RepositoryResource>;
export type Integration = z.infer<typeof IntegrationResource>;
export type Incident = z.infer<typeof IncidentResource>;
export type Member = z.infer<typeof MemberResource>;
export type User = z.infer<typeof UserResource>;
export type Role = User["role"];
export type Token = z.infer<typeof ApiToken>;
export type TokenCreated = z.infer<typeof ApiTokenCreated>;
export type Session = z.infer<typeof SessionResult>;
export type SetupStatus = z.infer<typeof SetupStatusSchema>;
export type Runner = z.infer<typeof RunnerResource>;
export type Artifact = z.infer<typeof ArtifactResource>;
export type Delivery = z.infer<typeof DeliveryResource>;
export type OidcSettings = z.infer<typeof PublicOidcSettings>;
export type TrustedProxySettings = z.infer<typeof PublicTrustedProxySettings>;
export type Me = z.infer<typeof MeResult>;
export type PipelineFile = z.infer<typeof PipelineFileResult>;
export type Deployment = z.infer<typeof DeploymentResource>;
/** An environment as GET /v1/projects/{id}/environments lists it: with what each of its targets holds now. */
export type Environment = z.infer<typeof EnvironmentResource> & { current: z.infer<typeof CurrentVersion>[] };

export type BuildListEntry = z.infer<typeof BuildListItem>;
export type TestSummary = z.infer<typeof TestSummary>;
export type BuildTests = z.infer<typeof BuildTestsAnswer>;
export type TestCase = z.infer<typeof TestCaseResource>;
export type AnalyzerIssue = z.infer<typeof Annotation>;
export type Coverage = z.infer<typeof CoverageAnswer>;
export type TestInfo = z.infer<typeof TestResource>;
export type TestHistoryEntry = z.infer<typeof HistoryEntry>;
export type Trend = z.infer<typeof TrendPoint>;

/** One line of a build's log, as GET /v1/builds/{id}/logs and the SSE stream's `log` event send it. */
export interface LogLine {
  seq: number | null;
  step: string;
  stream: string;
  ts: number;
  text: string;
}
