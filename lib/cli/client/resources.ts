// The API's answers as the user commands read them: types taken from the daemon's own zod schemas
// (type-only imports, nothing of zod is loaded), so a changed response is a type error here
// rather than an `undefined` printed in a table.
import type { z } from "zod";
import type { BuildResource } from "../../builds/wire.ts";
import type { PipelineResource } from "../../pipelines/wire.ts";
import type { ProjectResource } from "../../projects/wire.ts";
import type { ArtifactResource } from "../../runners/protocol-wire.ts";
import type { DeploymentResource } from "../../publishing/deployments.ts";

export type Build = z.infer<typeof BuildResource>;
export type Project = z.infer<typeof ProjectResource>;
export type Pipeline = z.infer<typeof PipelineResource>;
export type Artifact = z.infer<typeof ArtifactResource>;
export type Deployment = z.infer<typeof DeploymentResource>;

export interface ProjectList {
  projects: Project[];
}
export interface PipelineList {
  pipelines: Pipeline[];
}
export interface BuildList {
  builds: Build[];
}
export interface OneBuild {
  build: Build;
}
export interface ArtifactList {
  artifacts: Artifact[];
}
export interface OneDeployment {
  deployment: Deployment;
}
