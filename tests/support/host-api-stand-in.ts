// A STAND-IN for the GitHub, GitLab and Gitea/Forgejo REST APIs, for tests only: the real hosts cannot be
// reached from here. It answers the few endpoints Roost calls with the response shapes the hosts
// document (GitHub: /app/installations/{id}/access_tokens, /installation/repositories with Link
// pagination, /repos/{o}/{r}/branches/{b}, /repos/{o}/{r}/statuses/{sha}, check runs: POST
// /repos/{o}/{r}/check-runs and PATCH /repos/{o}/{r}/check-runs/{id}, 403 without the App's checks
// permission; GitLab: /api/v4/projects
// with x-next-page pagination, /projects/{id}/repository/branches/{b}, /projects/{id}/statuses/{sha}; Gitea: /api/v1/user/repos with Link
// pagination, /api/v1/repos/{o}/{r}/branches/{b}, /api/v1/repos/{o}/{r}/statuses/{sha}),
// File contents come from real git repositories registered in `repositories` (GitHub:
// /repos/{o}/{r}/contents/{path}?ref= with the raw media type; GitLab:
// /projects/{id}/repository/files/{path}/raw?ref=; Gitea: /api/v1/repos/{o}/{r}/raw/{path}?ref=;
// Bitbucket Cloud: /2.0/repositories/{workspace}?role=member paged by `next`,
// /2.0/repositories/{w}/{r}/refs/branches/{b}, /2.0/repositories/{w}/{r}/src/{commit}/{path} and
// POST /2.0/repositories/{w}/{r}/commit/{sha}/statuses/build, with a Bearer token or Basic app password),
// read with `git show <ref>:<path>` and 404 when the repository has no such file there; GitHub's
// branch endpoint answers a registered repository's real branch head when `heads` does not name it. It
// checks the credentials Roost must send (a GitHub App JWT signed with the app's key, then the
// installation token; GitLab's PRIVATE-TOKEN), and records every request.
// Releases, as a host_release publish makes them: GitHub's
// (https://docs.github.com/en/rest/releases/releases: GET /repos/{o}/{r}/releases/tags/{tag} for
// published releases only, GET /repos/{o}/{r}/releases newest first with drafts, POST (422
// already_exists for a tag that has one), PATCH /repos/{o}/{r}/releases/{id}; and
// https://docs.github.com/en/rest/releases/assets: the upload_url template, POST to it with ?name=
// and the raw bytes (422 already_exists for a name the release has), DELETE
// /repos/{o}/{r}/releases/assets/{id}; assets carry `digest` "sha256:…"). The uploads are served
// under /api/uploads/ of the stand-in's own address, as GitHub Enterprise Server does. GitLab's
// (https://docs.gitlab.com/api/releases/: GET, POST (409 for a tag that has one), PUT
// /projects/{id}/releases/{tag}; https://docs.gitlab.com/api/releases/links/: POST and PUT
// …/assets/links; https://docs.gitlab.com/user/packages/generic_packages/: PUT
// /projects/{id}/packages/generic/{name}/{version}/{file}, which keeps a second file of the same
// name as GitLab does; https://docs.gitlab.com/api/packages/: GET /projects/{id}/packages and
// …/packages/{id}/package_files with file_sha256).
import { createHash } from "node:crypto";
import { decodeJwt, jwtVerify, importSPKI } from "jose";
import { borrowRsaKey, returnRsaKeys } from "./test-keys.ts";

export interface StandInRepo {
  id: number;
  full_name: string;
  default_branch: string;
  private: boolean;
  /** Where runners clone from (a local repository in runner tests). */
  clone_url?: string;
}

export interface StandInCheckRun {
  id: number;
  repository: string;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string;
  details_url: string;
  output: { title: string; summary: string };
  annotations: Record<string, unknown>[];
}

export interface StandInReleaseAsset {
  id: number;
  name: string;
  size: number;
  /** "uploaded", or "open" for an upload that never finished (GitHub's asset states). */
  state: string;
  bytes: Buffer;
}

export interface StandInGithubRelease {
  id: number;
  repository: string;
  tag_name: string;
  target_commitish: string;
  name: string;
  body: string;
  draft: boolean;
  prerelease: boolean;
  assets: StandInReleaseAsset[];
}

export interface StandInGitlabRelease {
  project_id: number;
  tag_name: string;
  ref: string;
  name: string;
  description: string;
  links: { id: number; name: string; url: string; direct_asset_path?: string; link_type: string }[];
}

export interface StandInPackageFile {
  id: number;
  project_id: number;
  package_name: string;
  package_version: string;
  file_name: string;
  bytes: Buffer;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  /** When it arrived (Date.now()). */
  at: number;
}

export interface HostApiStandIn {
  url: string;
  github: {
    appId: string;
    installationId: string;
    privateKeyPem: string;
    repos: StandInRepo[];
    /** Check runs created, with every annotation sent (a PATCH adds its batch). */
    checkRuns: StandInCheckRun[];
    /** Whether the App was granted "Checks: read and write"; without it GitHub answers 403. */
    checksPermission: boolean;
    releases: StandInGithubRelease[];
    /** The next `n` asset uploads break off: the asset stays "open" and the answer is 502. */
    failUploads: number;
    /** The next `n` check runs created are never answered: the stand-in holds each until its client gives up (and creates none). */
    holdCheckRuns: number;
  };
  gitlab: { token: string; repos: StandInRepo[]; releases: StandInGitlabRelease[]; packageFiles: StandInPackageFile[] };
  gitea: { token: string; repos: StandInRepo[] };
  /** Bitbucket Cloud: repositories carry their UUID ("{…}") in `uuid`; full_name starts with the workspace. */
  bitbucket: { token: string; username: string; appPassword: string; repos: (StandInRepo & { uuid: string })[] };
  /** branch heads: "<full_name>@<branch>" → sha */
  heads: Map<string, string>;
  /** "<full_name>" → a local git repository whose files the contents endpoints serve. */
  repositories: Map<string, string>;
  /** "<full_name>:<path>" → a file served at every ref (for benches and tests whose commits are made up); before `repositories`. */
  files: Map<string, string>;
  requests: RecordedRequest[];
  /** The next `n` requests answer `status` (500 by default) with `headers` (to test retries, incidents and rate limits). */
  failNext(n: number, status?: number, headers?: Record<string, string>): void;
  /** GitHub commit statuses: how long each takes to answer, and the most that were in flight at once. */
  statuses: { delayMs: number; maxInFlight: number };
  stop(): Promise<void>;
}

const PAGE = 2; // small pages so tests exercise pagination

/** `address`: where it listens (loopback unless given, e.g. this process's address on a test LAN, tests/support/netns.ts). */
export async function startHostApiStandIn(address = "127.0.0.1"): Promise<HostApiStandIn> {
  const key = borrowRsaKey(); // the App's key, from the process's pool (test-keys.ts)
  const { privateKey, publicKey } = key;
  // GitHub hands out PKCS#1 PEM keys; so does the stand-in.
  const privateKeyPem = privateKey.export({ format: "pem", type: "pkcs1" }).toString();
  const verifyKey = await importSPKI(publicKey.export({ format: "pem", type: "spki" }).toString(), "RS256");
  const state: Omit<HostApiStandIn, "url" | "failNext" | "stop" | "statuses"> = {
    github: {
      appId: "424242",
      installationId: "5151",
      privateKeyPem,
      repos: [],
      checkRuns: [],
      checksPermission: true,
      releases: [],
      failUploads: 0,
      holdCheckRuns: 0,
    },
    gitlab: { token: "glpat-standin-token", repos: [], releases: [], packageFiles: [] },
    gitea: { token: "gitea-standin-token", repos: [] },
    bitbucket: { token: "bitbucket-standin-access-token", username: "roost-bot", appPassword: "bitbucket-standin-app-password", repos: [] },
    heads: new Map(),
    repositories: new Map(),
    files: new Map(),
    requests: [],
  };
  const installationToken = "ghs_standin_installation_token";
  /** A file at a ref of a registered repository, or null (no repository, ref or file). */
  const fileAt = (fullName: string, ref: string | null, path: string): string | null => {
    const everywhere = state.files.get(`${fullName}:${path}`);
    if (everywhere !== undefined) return everywhere;
    const dir = state.repositories.get(fullName);
    if (!dir || !ref || ref.startsWith("-") || path.startsWith("-")) return null;
    const shown = Bun.spawnSync(["git", "-C", dir, "show", `${ref}:${path}`], {
      stdout: "pipe",
      stderr: "ignore",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
    });
    return shown.exitCode === 0 ? shown.stdout.toString() : null;
  };
  /** A branch's head in a registered repository (when `heads` does not name it), or null. */
  const headOf = (fullName: string, branch: string): string | null => {
    const dir = state.repositories.get(fullName);
    if (!dir || branch.startsWith("-")) return null;
    const parsed = Bun.spawnSync(["git", "-C", dir, "rev-parse", "--verify", "-q", `refs/heads/${branch}`], {
      stdout: "pipe",
      stderr: "ignore",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
    });
    return parsed.exitCode === 0 ? parsed.stdout.toString().trim() : null;
  };
  let failures = 0;
  let failure: { status: number; headers: Record<string, string> } = { status: 500, headers: {} };
  const statuses = { delayMs: 0, maxInFlight: 0 };
  let statusesInFlight = 0;
  const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

  const server = Bun.serve({
    hostname: address,
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const sent = ["POST", "PATCH", "PUT"].includes(request.method) ? Buffer.from(await request.arrayBuffer()) : Buffer.alloc(0);
      // Uploads (release assets, package files) are bytes; everything else is JSON.
      const isJson = !(request.headers.get("content-type") ?? "").startsWith("application/octet-stream");
      const text = isJson ? sent.toString("utf8") : "";
      state.requests.push({
        method: request.method,
        path: url.pathname + url.search,
        headers: Object.fromEntries(request.headers),
        body: text ? JSON.parse(text) : isJson ? undefined : { bytes: sent.length },
        at: Date.now(),
      });
      if (failures > 0) {
        failures--;
        return json(
          { message: failure.status === 500 ? "Server Error (stand-in failure)" : "API rate limit exceeded (stand-in failure)" },
          failure.status,
          failure.headers,
        );
      }
      const base: string = `http://${address}:${server.port}`;
      const page = Number(url.searchParams.get("page") ?? "1");

      // ---- GitHub
      let m = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
      if (m && request.method === "POST") {
        const auth = request.headers.get("authorization") ?? "";
        try {
          // Judged when the app says it signed it (its iat, backdated 60 s), not by this machine's
          // clock: an app under test runs on a clock of its own (tests/helpers/app.ts, 2027-01-15),
          // and a real clock past that found every token expired. GitHub's own rule stays: at most
          // 10 minutes between iat and exp.
          const jwt = auth.replace(/^Bearer /, "");
          const signedAt = ((decodeJwt(jwt).iat ?? 0) + 60) * 1000;
          const { payload } = await jwtVerify(jwt, verifyKey, { algorithms: ["RS256"], currentDate: new Date(signedAt) });
          if (payload.iss !== state.github.appId) throw new Error("wrong issuer");
          if (payload.iat === undefined || payload.exp === undefined || payload.exp - payload.iat > 10 * 60) throw new Error("lifetime over 10 minutes");
        } catch {
          return json({ message: "A JSON web token could not be decoded" }, 401);
        }
        if (m[1] !== state.github.installationId) return json({ message: "Not Found" }, 404);
        return json({ token: installationToken, expires_at: new Date(Date.now() + 3600_000).toISOString() }, 201);
      }
      const githubAuthorized = request.headers.get("authorization") === `token ${installationToken}`;
      if (url.pathname === "/installation/repositories") {
        if (!githubAuthorized) return json({ message: "Bad credentials" }, 401);
        const slice = state.github.repos.slice((page - 1) * PAGE, page * PAGE);
        const headers: Record<string, string> = {};
        if (page * PAGE < state.github.repos.length)
          headers.link = `<${base}/installation/repositories?per_page=100&page=${page + 1}>; rel="next", <${base}/installation/repositories?page=99>; rel="last"`;
        return json(
          {
            total_count: state.github.repos.length,
            repositories: slice.map((r) => ({
              id: r.id,
              full_name: r.full_name,
              default_branch: r.default_branch,
              private: r.private,
              owner: { avatar_url: `https://avatars.example.test/${r.id}` },
              clone_url: r.clone_url ?? `https://github.example.test/${r.full_name}.git`,
            })),
          },
          200,
          headers,
        );
      }
      m = /^\/repos\/([^/]+)\/([^/]+)\/branches\/(.+)$/.exec(url.pathname);
      if (m && request.method === "GET") {
        if (!githubAuthorized) return json({ message: "Bad credentials" }, 401);
        const sha = state.heads.get(`${m[1]}/${m[2]}@${decodeURIComponent(m[3]!)}`) ?? headOf(`${m[1]}/${m[2]}`, decodeURIComponent(m[3]!));
        return sha ? json({ name: decodeURIComponent(m[3]!), commit: { sha } }) : json({ message: "Branch not found" }, 404);
      }
      m = /^\/repos\/([^/]+)\/([^/]+)\/contents\/(.+)$/.exec(url.pathname);
      if (m && request.method === "GET") {
        if (!githubAuthorized) return json({ message: "Bad credentials" }, 401);
        const bytes = fileAt(`${m[1]}/${m[2]}`, url.searchParams.get("ref"), decodeURIComponent(m[3]!));
        if (bytes === null) return json({ message: "Not Found", documentation_url: "https://docs.github.com/rest/repos/contents#get-repository-content" }, 404);
        if (request.headers.get("accept") === "application/vnd.github.raw+json")
          return new Response(bytes, { headers: { "content-type": "application/vnd.github.raw+json" } });
        return json({ type: "file", encoding: "base64", content: Buffer.from(bytes).toString("base64"), path: decodeURIComponent(m[3]!) });
      }
      m = /^\/repos\/([^/]+)\/([^/]+)\/statuses\/([0-9a-f]+)$/.exec(url.pathname);
      if (m && request.method === "POST") {
        if (!githubAuthorized) return json({ message: "Bad credentials" }, 401);
        statuses.maxInFlight = Math.max(statuses.maxInFlight, ++statusesInFlight);
        if (statuses.delayMs) await Bun.sleep(statuses.delayMs);
        statusesInFlight--;
        return json({ id: state.requests.length, state: (JSON.parse(text) as { state: string }).state }, 201);
      }
      m = /^\/repos\/([^/]+)\/([^/]+)\/check-runs(?:\/(\d+))?$/.exec(url.pathname);
      if (m && (request.method === "POST" || request.method === "PATCH")) {
        if (!githubAuthorized) return json({ message: "Bad credentials" }, 401);
        if (!state.github.checksPermission)
          return json(
            { message: "Resource not accessible by integration", documentation_url: "https://docs.github.com/rest/checks/runs#create-a-check-run" },
            403,
          );
        const body = JSON.parse(text) as Omit<StandInCheckRun, "id" | "repository" | "annotations"> & { output: { annotations?: Record<string, unknown>[] } };
        if ((body.output.annotations?.length ?? 0) > 50) return json({ message: "Validation Failed: at most 50 annotations" }, 422);
        if (request.method === "POST" && state.github.holdCheckRuns > 0) {
          state.github.holdCheckRuns--;
          // A host that stops answering: the client's abort ends the wait (a minute at most, should it never abort).
          await new Promise((resolve) => {
            request.signal.addEventListener("abort", resolve);
            setTimeout(resolve, 60_000);
          });
          return json({ message: "Gateway Timeout" }, 504);
        }
        if (request.method === "POST") {
          const run: StandInCheckRun = {
            ...body,
            id: state.github.checkRuns.length + 1,
            repository: `${m[1]}/${m[2]}`,
            annotations: body.output.annotations ?? [],
          };
          state.github.checkRuns.push(run);
          return json({ id: run.id, name: run.name, head_sha: run.head_sha, status: run.status, conclusion: run.conclusion }, 201);
        }
        const run = state.github.checkRuns.find((r) => r.id === Number(m![3]));
        if (!run) return json({ message: "Not Found" }, 404);
        run.annotations.push(...(body.output.annotations ?? []));
        return json({ id: run.id });
      }

      // ---- GitHub releases and their assets
      const releaseJson = (r: StandInGithubRelease) => ({
        id: r.id,
        tag_name: r.tag_name,
        target_commitish: r.target_commitish,
        name: r.name,
        body: r.body,
        draft: r.draft,
        prerelease: r.prerelease,
        html_url: `https://github.example.test/${r.repository}/releases/tag/${encodeURIComponent(r.tag_name)}`,
        upload_url: `${base}/api/uploads/repos/${r.repository}/releases/${r.id}/assets{?name,label}`,
        assets: r.assets.map(assetJson),
      });
      const assetJson = (a: StandInReleaseAsset) => ({
        id: a.id,
        name: a.name,
        size: a.size,
        state: a.state,
        content_type: "application/octet-stream",
        digest: a.state === "uploaded" ? `sha256:${createHash("sha256").update(a.bytes).digest("hex")}` : null,
      });
      m = /^\/repos\/([^/]+)\/([^/]+)\/releases(?:\/(tags\/.+|assets\/\d+|\d+))?$/.exec(url.pathname);
      if (m) {
        if (!githubAuthorized) return json({ message: "Bad credentials" }, 401);
        const repository = `${m[1]}/${m[2]}`;
        const mine = state.github.releases.filter((r) => r.repository === repository);
        const rest = m[3] ?? "";
        if (rest.startsWith("tags/") && request.method === "GET") {
          // "Get a published release with the specified tag name": drafts are not found here.
          const r = mine.find((r) => r.tag_name === decodeURIComponent(rest.slice(5)) && !r.draft);
          return r
            ? json(releaseJson(r))
            : json({ message: "Not Found", documentation_url: "https://docs.github.com/rest/releases/releases#get-a-release-by-tag-name" }, 404);
        }
        if (rest === "" && request.method === "GET") return json([...mine].reverse().map(releaseJson));
        if (rest === "" && request.method === "POST") {
          const body = JSON.parse(text) as Partial<StandInGithubRelease>;
          if (mine.some((r) => r.tag_name === body.tag_name))
            return json({ message: "Validation Failed", errors: [{ resource: "Release", code: "already_exists", field: "tag_name" }] }, 422);
          const r: StandInGithubRelease = {
            id: 1000 + state.github.releases.length,
            repository,
            tag_name: String(body.tag_name),
            target_commitish: body.target_commitish ?? "main",
            name: body.name ?? String(body.tag_name),
            body: body.body ?? "",
            draft: body.draft ?? false,
            prerelease: body.prerelease ?? false,
            assets: [],
          };
          state.github.releases.push(r);
          return json(releaseJson(r), 201);
        }
        const r = /^\d+$/.test(rest) ? mine.find((r) => r.id === Number(rest)) : undefined;
        if (r && request.method === "PATCH") {
          const body = JSON.parse(text) as Partial<StandInGithubRelease>;
          for (const k of ["name", "body", "draft", "prerelease"] as const) if (body[k] !== undefined) (r as unknown as Record<string, unknown>)[k] = body[k];
          return json(releaseJson(r));
        }
        if (rest.startsWith("assets/") && request.method === "DELETE") {
          const id = Number(rest.slice(7));
          const owner = mine.find((r) => r.assets.some((a) => a.id === id));
          if (!owner) return json({ message: "Not Found" }, 404);
          owner.assets = owner.assets.filter((a) => a.id !== id);
          return new Response(null, { status: 204 });
        }
        return json({ message: "Not Found" }, 404);
      }
      m = /^\/api\/uploads\/repos\/([^/]+)\/([^/]+)\/releases\/(\d+)\/assets$/.exec(url.pathname);
      if (m && request.method === "POST") {
        if (!githubAuthorized) return json({ message: "Bad credentials" }, 401);
        const r = state.github.releases.find((r) => r.repository === `${m![1]}/${m![2]}` && r.id === Number(m![3]));
        if (!r) return json({ message: "Not Found" }, 404);
        const name = url.searchParams.get("name") ?? "";
        if (!name) return json({ message: "Validation Failed", errors: [{ resource: "ReleaseAsset", code: "missing_field", field: "name" }] }, 422);
        if (r.assets.some((a) => a.name === name))
          return json({ message: "Validation Failed", errors: [{ resource: "ReleaseAsset", code: "already_exists", field: "name" }] }, 422);
        const asset: StandInReleaseAsset = { id: 5000 + state.requests.length, name, size: sent.length, state: "uploaded", bytes: sent };
        r.assets.push(asset);
        if (state.github.failUploads > 0) {
          state.github.failUploads--;
          asset.state = "open";
          return json({ message: "Bad Gateway (stand-in failure)" }, 502);
        }
        return json(assetJson(asset), 201);
      }

      // ---- GitLab
      if (url.pathname.startsWith("/api/v4/")) {
        if (request.headers.get("private-token") !== state.gitlab.token) return json({ message: "401 Unauthorized" }, 401);
        if (url.pathname === "/api/v4/projects") {
          const slice = state.gitlab.repos.slice((page - 1) * PAGE, page * PAGE);
          const next = page * PAGE < state.gitlab.repos.length ? String(page + 1) : "";
          return json(
            slice.map((r) => ({
              id: r.id,
              path_with_namespace: r.full_name,
              default_branch: r.default_branch,
              visibility: r.private ? "private" : "public",
              avatar_url: null,
              http_url_to_repo: `https://gitlab.example.test/${r.full_name}.git`,
            })),
            200,
            { "x-next-page": next, "x-page": String(page), "x-total": String(state.gitlab.repos.length) },
          );
        }
        m = /^\/api\/v4\/projects\/(\d+)\/repository\/branches\/(.+)$/.exec(url.pathname);
        if (m) {
          const repo = state.gitlab.repos.find((r) => String(r.id) === m![1]);
          const sha = repo ? state.heads.get(`${repo.full_name}@${decodeURIComponent(m[2]!)}`) : undefined;
          return sha ? json({ name: decodeURIComponent(m[2]!), commit: { id: sha } }) : json({ message: "404 Branch Not Found" }, 404);
        }
        m = /^\/api\/v4\/projects\/(\d+)\/repository\/files\/([^/]+)\/raw$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const repo = state.gitlab.repos.find((r) => String(r.id) === m![1]);
          const bytes = repo ? fileAt(repo.full_name, url.searchParams.get("ref"), decodeURIComponent(m[2]!)) : null;
          return bytes === null
            ? json({ message: "404 File Not Found" }, 404)
            : new Response(bytes, { headers: { "content-type": "text/plain; charset=utf-8" } });
        }
        m = /^\/api\/v4\/projects\/(\d+)\/statuses\/([0-9a-f]+)$/.exec(url.pathname);
        if (m && request.method === "POST") return json({ id: state.requests.length, status: (JSON.parse(text) as { state: string }).state }, 201);
        // Generic packages and the packages API
        m = /^\/api\/v4\/projects\/(\d+)\/packages\/generic\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
        if (m && request.method === "PUT") {
          state.gitlab.packageFiles.push({
            id: state.gitlab.packageFiles.length + 1,
            project_id: Number(m[1]),
            package_name: decodeURIComponent(m[2]!),
            package_version: decodeURIComponent(m[3]!),
            file_name: decodeURIComponent(m[4]!),
            bytes: sent,
          });
          return json({ message: "201 Created" }, 201);
        }
        const packagesOf = (project: number) => {
          const seen = new Map<string, { id: number; name: string; version: string; package_type: string }>();
          for (const f of state.gitlab.packageFiles.filter((f) => f.project_id === project)) {
            const key = `${f.package_name}/${f.package_version}`;
            if (!seen.has(key)) seen.set(key, { id: 700 + seen.size, name: f.package_name, version: f.package_version, package_type: "generic" });
          }
          return [...seen.values()];
        };
        m = /^\/api\/v4\/projects\/(\d+)\/packages$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const name = url.searchParams.get("package_name");
          const version = url.searchParams.get("package_version");
          return json(packagesOf(Number(m[1])).filter((p) => (!name || p.name === name) && (!version || p.version === version)));
        }
        m = /^\/api\/v4\/projects\/(\d+)\/packages\/(\d+)\/package_files$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const p = packagesOf(Number(m[1])).find((p) => p.id === Number(m![2]));
          if (!p) return json({ message: "404 Package Not Found" }, 404);
          return json(
            state.gitlab.packageFiles
              .filter((f) => f.project_id === Number(m![1]) && f.package_name === p.name && f.package_version === p.version)
              .map((f) => ({
                id: f.id,
                package_id: p.id,
                file_name: f.file_name,
                size: f.bytes.length,
                file_sha256: createHash("sha256").update(f.bytes).digest("hex"),
              })),
          );
        }
        // Releases and their links
        m = /^\/api\/v4\/projects\/(\d+)\/releases(?:\/([^/]+)(\/assets\/links(?:\/(\d+))?)?)?$/.exec(url.pathname);
        if (m) {
          const projectId = Number(m[1]);
          const tag = m[2] ? decodeURIComponent(m[2]) : null;
          const repo = state.gitlab.repos.find((r) => r.id === projectId);
          const releaseJson = (r: StandInGitlabRelease) => ({
            tag_name: r.tag_name,
            name: r.name,
            description: r.description,
            assets: {
              count: r.links.length,
              sources: [],
              links: r.links.map((l) => ({
                ...l,
                direct_asset_url: `https://gitlab.example.test/${repo?.full_name}/-/releases/${r.tag_name}/downloads${l.direct_asset_path ?? `/${l.name}`}`,
              })),
            },
            _links: { self: `https://gitlab.example.test/${repo?.full_name}/-/releases/${encodeURIComponent(r.tag_name)}` },
          });
          if (!tag && request.method === "POST") {
            const body = JSON.parse(text) as {
              tag_name: string;
              ref?: string;
              name?: string;
              description?: string;
              assets?: { links?: StandInGitlabRelease["links"] };
            };
            if (state.gitlab.releases.some((r) => r.project_id === projectId && r.tag_name === body.tag_name))
              return json({ message: "Release already exists" }, 409);
            const r: StandInGitlabRelease = {
              project_id: projectId,
              tag_name: body.tag_name,
              ref: body.ref ?? "",
              name: body.name ?? body.tag_name,
              description: body.description ?? "",
              links: (body.assets?.links ?? []).map((l, i) => ({ ...l, id: 900 + i + state.requests.length })),
            };
            state.gitlab.releases.push(r);
            return json(releaseJson(r), 201);
          }
          const r = state.gitlab.releases.find((r) => r.project_id === projectId && r.tag_name === tag);
          if (!r) return json({ message: "404 Not Found" }, 404);
          if (!m[3] && request.method === "GET") return json(releaseJson(r));
          if (!m[3] && request.method === "PUT") {
            const body = JSON.parse(text) as { name?: string; description?: string };
            if (body.name !== undefined) r.name = body.name;
            if (body.description !== undefined) r.description = body.description;
            return json(releaseJson(r));
          }
          if (m[3] && !m[4] && request.method === "POST") {
            const body = JSON.parse(text) as StandInGitlabRelease["links"][number];
            if (r.links.some((l) => l.name === body.name)) return json({ message: { name: ["has already been taken"] } }, 400);
            const link = { ...body, id: 900 + state.requests.length };
            r.links.push(link);
            return json(link, 201);
          }
          const link = m[4] ? r.links.find((l) => l.id === Number(m![4])) : undefined;
          if (link && request.method === "PUT") {
            Object.assign(link, JSON.parse(text) as object);
            return json(link);
          }
          return json({ message: "404 Not Found" }, 404);
        }
      }
      // ---- Gitea / Forgejo (https://docs.gitea.com/api/): /api/v1/user/repos paged by a Link header,
      // branches, commit statuses; `Authorization: token <token>`.
      if (url.pathname.startsWith("/api/v1/")) {
        if (request.headers.get("authorization") !== `token ${state.gitea.token}`) return json({ message: "token is required" }, 401);
        if (url.pathname === "/api/v1/user/repos") {
          const slice = state.gitea.repos.slice((page - 1) * PAGE, page * PAGE);
          const headers: Record<string, string> = { "x-total-count": String(state.gitea.repos.length) };
          if (page * PAGE < state.gitea.repos.length) headers.link = `<${base}/api/v1/user/repos?limit=50&page=${page + 1}>; rel="next"`;
          return json(
            slice.map((r) => ({
              id: r.id,
              full_name: r.full_name,
              default_branch: r.default_branch,
              private: r.private,
              avatar_url: "",
              owner: { avatar_url: `https://gitea.example.test/avatars/${r.id}` },
              clone_url: r.clone_url ?? `https://gitea.example.test/${r.full_name}.git`,
            })),
            200,
            headers,
          );
        }
        m = /^\/api\/v1\/repos\/([^/]+)\/([^/]+)\/branches\/(.+)$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const sha = state.heads.get(`${m[1]}/${m[2]}@${decodeURIComponent(m[3]!)}`);
          return sha ? json({ name: decodeURIComponent(m[3]!), commit: { id: sha } }) : json({ message: "branch does not exist" }, 404);
        }
        m = /^\/api\/v1\/repos\/([^/]+)\/([^/]+)\/raw\/(.+)$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const bytes = fileAt(`${m[1]}/${m[2]}`, url.searchParams.get("ref"), decodeURIComponent(m[3]!));
          return bytes === null
            ? json({ message: "GetBlobByPath", errors: ["object does not exist"] }, 404)
            : new Response(bytes, { headers: { "content-type": "text/plain; charset=utf-8" } });
        }
        m = /^\/api\/v1\/repos\/([^/]+)\/([^/]+)\/statuses\/([0-9a-f]+)$/.exec(url.pathname);
        if (m && request.method === "POST") return json({ id: state.requests.length, status: (JSON.parse(text) as { state: string }).state }, 201);
      }
      // ---- Bitbucket Cloud (https://developer.atlassian.com/cloud/bitbucket/rest/): pages carry the
      // next page's URL in `next`; errors are {type: "error", error: {message}}.
      if (url.pathname.startsWith("/2.0/")) {
        const auth = request.headers.get("authorization");
        const basic = `Basic ${Buffer.from(`${state.bitbucket.username}:${state.bitbucket.appPassword}`).toString("base64")}`;
        if (auth !== `Bearer ${state.bitbucket.token}` && auth !== basic) return json({ type: "error", error: { message: "Unauthorized" } }, 401);
        m = /^\/2\.0\/repositories\/([^/]+)$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const mine = state.bitbucket.repos.filter((r) => r.full_name.startsWith(`${decodeURIComponent(m![1]!)}/`));
          const slice = mine.slice((page - 1) * PAGE, page * PAGE);
          const next: string | undefined = page * PAGE < mine.length ? `${base}${url.pathname}?role=member&pagelen=100&page=${page + 1}` : undefined;
          return json({
            pagelen: PAGE,
            page,
            size: mine.length,
            ...(next ? { next } : {}),
            values: slice.map((r) => ({
              type: "repository",
              uuid: r.uuid,
              full_name: r.full_name,
              is_private: r.private,
              mainbranch: { type: "branch", name: r.default_branch },
              links: {
                avatar: { href: `https://bytebucket.example.test/${r.id}.png` },
                clone: [
                  { name: "https", href: `https://roost-bot@bitbucket.example.test/${r.full_name}.git` },
                  { name: "ssh", href: `git@bitbucket.example.test:${r.full_name}.git` },
                ],
              },
            })),
          });
        }
        m = /^\/2\.0\/repositories\/([^/]+)\/([^/]+)\/refs\/branches\/(.+)$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const sha = state.heads.get(`${m[1]}/${m[2]}@${decodeURIComponent(m[3]!)}`) ?? headOf(`${m[1]}/${m[2]}`, decodeURIComponent(m[3]!));
          return sha
            ? json({ type: "branch", name: decodeURIComponent(m[3]!), target: { type: "commit", hash: sha } })
            : json({ type: "error", error: { message: "Branch not found" } }, 404);
        }
        m = /^\/2\.0\/repositories\/([^/]+)\/([^/]+)\/src\/([^/]+)\/(.+)$/.exec(url.pathname);
        if (m && request.method === "GET") {
          const bytes = fileAt(`${m[1]}/${m[2]}`, decodeURIComponent(m[3]!), decodeURIComponent(m[4]!));
          return bytes === null
            ? json({ type: "error", error: { message: "No such file or directory" } }, 404)
            : new Response(bytes, { headers: { "content-type": "text/plain" } });
        }
        m = /^\/2\.0\/repositories\/([^/]+)\/([^/]+)\/commit\/([0-9a-f]+)\/statuses\/build$/.exec(url.pathname);
        if (m && request.method === "POST") return json({ type: "build", ...(JSON.parse(text) as object) }, 201);
      }
      return json({ message: "Not Found (stand-in has no such endpoint)" }, 404);
    },
  });
  return {
    url: `http://${address}:${server.port}`,
    ...state,
    statuses,
    failNext(n, status = 500, headers = {}) {
      failures = n;
      failure = { status, headers };
    },
    async stop() {
      await server.stop(true);
      returnRsaKeys(key);
    },
  };
}
