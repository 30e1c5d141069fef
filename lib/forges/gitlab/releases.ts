// A GitLab Release of a tag with the build's assets (docs/publishing.md "Host releases"), with the
// integration's token (scope api, a Developer or higher on the project). GitLab keeps a release's
// files elsewhere: each asset goes to the project's generic package registry, and the release
// links to it.
//  1. the package files there already: GET /projects/:id/packages?package_type=generic&package_name=
//     &package_version=, then GET /projects/:id/packages/:package_id/package_files; a file whose
//     name and SHA-256 are there is not uploaded again, the others are
//     (PUT /projects/:id/packages/generic/:package_name/:package_version/:file_name);
//  2. the release of the tag: GET /projects/:id/releases/:tag_name;
//  3. none: POST /projects/:id/releases (tag_name, ref, name, description, assets.links); one
//     already (a retry, a promotion): PUT /projects/:id/releases/:tag_name (name, description) and
//     POST /projects/:id/releases/:tag_name/assets/links for each link it lacks, so there is never
//     a second release of a tag nor a second link of one name.
// The package is named after the repository, its version is the tag. GitLab releases have no
// draft or pre-release state: those keys are ignored, with a line in the log.
// https://docs.gitlab.com/api/releases/, https://docs.gitlab.com/api/releases/links/,
// https://docs.gitlab.com/user/packages/generic_packages/, https://docs.gitlab.com/api/packages/
import type { PublishRelease } from "../forge.ts";
import type { GitlabClient } from "./api.ts";

interface GitlabPackage {
  id: number;
  name: string;
  version: string;
}
interface GitlabPackageFile {
  file_name: string;
  size: number;
  file_sha256?: string | null;
}
interface GitlabReleaseLink {
  id: number;
  name: string;
  url: string;
}
interface GitlabRelease {
  tag_name: string;
  _links?: { self?: string };
  assets?: { links?: GitlabReleaseLink[] };
}

/** A generic package's name or version: letters, digits and . _ - + only (GitLab's rule), nothing else. */
export function packageSegment(text: string): string {
  const cleaned = text.replace(/[^0-9A-Za-z._+-]/g, "-").replace(/\.{2,}/g, ".");
  return cleaned.replace(/^[.-]+|[.-]+$/g, "") || "release";
}

export function gitlabPublishRelease(clientFor: (...a: Parameters<PublishRelease>) => Promise<GitlabClient>): PublishRelease {
  return async (deps, integration, repository, release, log) => {
    const api = await clientFor(deps, integration, repository, release, log);
    const project = `/projects/${encodeURIComponent(repository.external_id)}`;
    const call = async <T>(method: string, path: string, body?: unknown, orNull = false): Promise<T | null> => {
      try {
        const answer = await api.call<T>(method, path, body, orNull);
        log(`[gitlab] ${method} ${path.split("?")[0]}: HTTP ${answer.status}`);
        return answer.body;
      } catch (error) {
        log(`[gitlab] ${method} ${path.split("?")[0]}: ${(error as Error).message}`);
        throw error;
      }
    };
    if (release.draft || release.prerelease) log("[gitlab] GitLab releases have no draft or pre-release state; draft and prerelease are ignored");
    const name = packageSegment(repository.full_name.split("/").pop() ?? "release");
    const version = packageSegment(release.tag);
    const packagePath = (file: string) => `${project}/packages/generic/${encodeURIComponent(name)}/${encodeURIComponent(version)}/${encodeURIComponent(file)}`;
    // 1.
    const packages =
      (await call<GitlabPackage[]>(
        "GET",
        `${project}/packages?package_type=generic&package_name=${encodeURIComponent(name)}&package_version=${encodeURIComponent(version)}&per_page=100`,
      )) ?? [];
    const had: GitlabPackageFile[] = [];
    for (const p of packages.filter((p) => p.name === name && p.version === version))
      had.push(...((await call<GitlabPackageFile[]>("GET", `${project}/packages/${p.id}/package_files?per_page=100`)) ?? []));
    const uploaded: string[] = [];
    const kept: string[] = [];
    for (const asset of release.assets) {
      if (had.some((f) => f.file_name === asset.name && (f.file_sha256 ? f.file_sha256 === asset.sha256 : f.size === asset.size))) {
        log(`[gitlab] ${asset.name}: the package registry has these bytes already; not uploaded again`);
        kept.push(asset.name);
        continue;
      }
      try {
        const status = await api.uploadGenericPackageFile(packagePath(asset.name), await asset.bytes(), asset.size);
        log(`[gitlab] PUT ${packagePath(asset.name)} (${asset.size} bytes): HTTP ${status}`);
      } catch (error) {
        log(`[gitlab] PUT ${packagePath(asset.name)}: ${(error as Error).message}`);
        throw error;
      }
      uploaded.push(asset.name);
    }
    const links = release.assets.map((a) => ({
      name: a.name,
      url: `${api.apiBase}${packagePath(a.name)}`,
      direct_asset_path: `/${a.name}`,
      link_type: "package",
    }));
    // 2.
    const tagPath = `${project}/releases/${encodeURIComponent(release.tag)}`;
    const existing = await call<GitlabRelease>("GET", tagPath, undefined, true);
    // 3.
    let current: GitlabRelease;
    if (!existing) {
      current = (await call<GitlabRelease>("POST", `${project}/releases`, {
        tag_name: release.tag,
        ref: release.commit_sha,
        name: release.name,
        description: release.notes,
        assets: { links },
      }))!;
    } else {
      current = (await call<GitlabRelease>("PUT", tagPath, { name: release.name, description: release.notes }))!;
      const present = existing.assets?.links ?? [];
      for (const link of links) {
        const same = present.find((l) => l.name === link.name);
        if (same && same.url === link.url) continue;
        if (same) await call("PUT", `${tagPath}/assets/links/${same.id}`, link);
        else await call("POST", `${tagPath}/assets/links`, link);
      }
    }
    log(`[gitlab] release ${release.tag} ${existing ? "existed: updated its name, notes and links" : "created"}`);
    const web = integration.web_url.replace(/\/+$/, "");
    return {
      id: release.tag,
      url: current._links?.self ?? existing?._links?.self ?? `${web}/${repository.full_name}/-/releases/${encodeURIComponent(release.tag)}`,
      created: !existing,
      uploaded,
      kept,
    };
  };
}
