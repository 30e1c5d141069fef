// A GitLab release of a tag (lib/forges/gitlab/releases.ts) against the host-API stand-in, which
// serves GitLab's releases, release links, generic packages and packages API as
// docs.gitlab.com documents them: the files go to the generic package registry once, the release
// links to them, and a retry (a new link, a changed file) updates the one release of the tag.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHostApiStandIn, type HostApiStandIn } from "../../../support/host-api-stand-in.ts";
import { GitlabClient } from "../../../../lib/forges/gitlab/api.ts";
import { gitlabPublishRelease, packageSegment } from "../../../../lib/forges/gitlab/releases.ts";
import type { HostRelease, ReleaseAsset } from "../../../../lib/forges/forge.ts";
import type { Integration } from "../../../../lib/integrations/store.ts";
import type { AppContext } from "../../../../lib/http/context.ts";

let host: HostApiStandIn;
beforeAll(async () => {
  host = await startHostApiStandIn();
  host.gitlab.repos.push({ id: 77, full_name: "group/mobile", default_branch: "main", private: true });
});
afterAll(() => host.stop());

const publish = gitlabPublishRelease(
  async () =>
    new GitlabClient(
      host.url,
      { access_token: host.gitlab.token },
      { fetch, allowLinkLocal: true, now: () => Math.floor(Date.now() / 1000), tokens: new Map() },
    ),
);
const integration = { web_url: "https://gitlab.example.test" } as Integration;
const deps = {} as Pick<AppContext, "secrets" | "config" | "clock">;
const repository = { external_id: "77", full_name: "group/mobile" };

function asset(name: string, text: string): ReleaseAsset {
  return { name, size: text.length, sha256: new Bun.CryptoHasher("sha256").update(text).digest("hex"), bytes: async () => new Blob([text]) };
}
const release = (assets: ReleaseAsset[], notes = "Offline mode"): HostRelease => ({
  tag: "v1.0.0",
  commit_sha: "a".repeat(40),
  name: "1.0.0",
  notes,
  draft: false,
  prerelease: false,
  assets,
});
const puts = () => host.requests.filter((r) => r.method === "PUT" && r.path.includes("/packages/generic/")).map((r) => r.path);
const LINK = (file: string) => `${host.url}/api/v4/projects/77/packages/generic/mobile/v1.0.0/${file}`;

test("the first publish uploads each file to the generic package registry and creates the release linking them", async () => {
  const lines: string[] = [];
  const answer = await publish(deps, integration, repository, release([asset("app.apk", "apk"), asset("app.aab", "aab")]), (l) => lines.push(l));
  expect(answer).toEqual({
    id: "v1.0.0",
    url: "https://gitlab.example.test/group/mobile/-/releases/v1.0.0",
    created: true,
    uploaded: ["app.apk", "app.aab"],
    kept: [],
  });
  expect(puts()).toEqual(["/api/v4/projects/77/packages/generic/mobile/v1.0.0/app.apk", "/api/v4/projects/77/packages/generic/mobile/v1.0.0/app.aab"]);
  expect(host.gitlab.releases.map((r) => ({ ...r, links: r.links.map((l) => [l.name, l.url, l.link_type]) }))).toEqual([
    {
      project_id: 77,
      tag_name: "v1.0.0",
      ref: "a".repeat(40),
      name: "1.0.0",
      description: "Offline mode",
      links: [
        ["app.apk", LINK("app.apk"), "package"],
        ["app.aab", LINK("app.aab"), "package"],
      ],
    },
  ]);
  expect(lines).toContain("[gitlab] POST /projects/77/releases: HTTP 201");
  expect(lines.join("\n")).not.toContain(host.gitlab.token);
});

test("again, with a file more: the one release is updated, only the new file is uploaded and linked", async () => {
  const answer = await publish(
    deps,
    integration,
    repository,
    release([asset("app.apk", "apk"), asset("app.aab", "aab"), asset("symbols.zip", "zip")], "Offline mode, fixed"),
    () => {},
  );
  expect(answer).toMatchObject({ created: false, uploaded: ["symbols.zip"], kept: ["app.apk", "app.aab"] });
  expect(puts()).toHaveLength(3);
  expect(host.gitlab.releases).toHaveLength(1);
  expect(host.gitlab.releases[0]).toMatchObject({ description: "Offline mode, fixed" });
  expect(host.gitlab.releases[0]!.links.map((l) => l.name)).toEqual(["app.apk", "app.aab", "symbols.zip"]);
});

test("package names and versions keep only what GitLab allows", () => {
  expect([packageSegment("v1.0.0"), packageSegment("release/2.0"), packageSegment("..x.."), packageSegment("")]).toEqual([
    "v1.0.0",
    "release-2.0",
    "x",
    "release",
  ]);
});
