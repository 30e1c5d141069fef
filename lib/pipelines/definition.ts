// Which pipeline definition a build used (builds.definition_source, docs/pipelines.md): the
// pipeline file at a commit, or the pipeline as configured through the API.

/** Which definition a build used; stored on the build (builds.definition_source). */
export type DefinitionSource =
  | { source: "api" }
  | {
      source: "file";
      path: string;
      /** The commit the file was read at. */
      commit_sha: string;
      /** For a pull request from a fork: the target branch whose file was used. */
      branch?: string;
    };

export const API_DEFINITION: DefinitionSource = { source: "api" };

/** The definition source as stored (a JSON text column; NULL for builds from before the column). */
export function parseDefinitionSource(value: unknown): DefinitionSource {
  if (typeof value !== "string" || value === "") return API_DEFINITION;
  try {
    const parsed = JSON.parse(value) as DefinitionSource;
    return parsed && (parsed.source === "api" || parsed.source === "file") ? parsed : API_DEFINITION;
  } catch {
    return API_DEFINITION;
  }
}
