// A GitHub Release of a tag with the build's assets (docs/publishing.md "Host releases"), made
// with the installation's token (the App needs "Contents: read and write"):
//  1. the release of the tag: GET /repos/{o}/{r}/releases/tags/{tag}; a draft has no published
//     tag, so it is looked for among the newest releases (GET /repos/{o}/{r}/releases);
//  2. none: POST /repos/{o}/{r}/releases (tag_name, target_commitish, name, body, draft,
//     prerelease); one already (a retry, a promotion): PATCH /repos/{o}/{r}/releases/{id} with the
//     same fields, so there is never a second release of a tag;
//  3. each asset GitHub does not have with the same bytes is uploaded to the release's upload_url
//     (POST …/assets?name=); an asset of the same name with other bytes, or an upload that never
//     finished (state "starter"), is deleted first (DELETE /repos/{o}/{r}/releases/assets/{id}).
// Same bytes: GitHub's `digest` (sha256) when it gives one, else the same size.
// https://docs.github.com/en/rest/releases/releases, https://docs.github.com/en/rest/releases/assets
import type { PublishRelease } from "../forge.ts";
import type { GithubClient, GithubRelease, GithubReleaseAsset } from "./api.ts";

export function githubPublishRelease(clientFor: (...a: Parameters<PublishRelease>) => Promise<GithubClient>): PublishRelease {
  return async (deps, integration, repository, release, log) => {
    const api = await clientFor(deps, integration, repository, release, log);
    const repo = `/repos/${repository.full_name.split("/").map(encodeURIComponent).join("/")}`;
    const call = async <T>(method: string, path: string, body?: unknown, orNull = false): Promise<T | null> => {
      try {
        const answer = await api.call<T>(method, path, body, orNull);
        log(`[github] ${method} ${path.split("?")[0]}: HTTP ${answer.status}`);
        return answer.body;
      } catch (error) {
        log(`[github] ${method} ${path.split("?")[0]}: ${(error as Error).message}`);
        throw error;
      }
    };
    // 1.
    let existing = await call<GithubRelease>("GET", `${repo}/releases/tags/${encodeURIComponent(release.tag)}`, undefined, true);
    if (!existing) existing = ((await call<GithubRelease[]>("GET", `${repo}/releases?per_page=100`)) ?? []).find((r) => r.tag_name === release.tag) ?? null;
    // 2.
    const fields = { name: release.name, body: release.notes, draft: release.draft, prerelease: release.prerelease };
    const current = existing
      ? (await call<GithubRelease>("PATCH", `${repo}/releases/${existing.id}`, fields))!
      : (await call<GithubRelease>("POST", `${repo}/releases`, { tag_name: release.tag, target_commitish: release.commit_sha, ...fields }))!;
    log(`[github] release ${release.tag} (${current.id}) ${existing ? "existed: updated its name, notes and state" : "created"}`);
    // 3.
    const uploaded: string[] = [];
    const kept: string[] = [];
    for (const asset of release.assets) {
      const had: GithubReleaseAsset | undefined = (current.assets ?? []).find((a) => a.name === asset.name);
      if (had && had.state === "uploaded" && (had.digest ? had.digest === `sha256:${asset.sha256}` : had.size === asset.size)) {
        log(`[github] ${asset.name}: GitHub has these bytes already; not uploaded again`);
        kept.push(asset.name);
        continue;
      }
      if (had) await call("DELETE", `${repo}/releases/assets/${had.id}`);
      try {
        await api.uploadReleaseAsset(current.upload_url, asset.name, await asset.bytes(), asset.size);
        log(`[github] POST ${repo}/releases/${current.id}/assets?name=${asset.name} (${asset.size} bytes): HTTP 201`);
      } catch (error) {
        log(`[github] POST ${repo}/releases/${current.id}/assets?name=${asset.name}: ${(error as Error).message}`);
        throw error;
      }
      uploaded.push(asset.name);
    }
    return { id: String(current.id), url: current.html_url, created: !existing, uploaded, kept };
  };
}
