// TestFlight through App Store Connect (docs/publishing.md "App Store Connect"):
//  1. the API key: an ES256 JWT (kid = key id; iss = issuer id; aud "appstoreconnect-v1"; at most
//     20 minutes) signed with the .p8, as Apple's "Generating Tokens for API Requests" says
//     (https://developer.apple.com/documentation/appstoreconnectapi/generating-tokens-for-api-requests);
//  2. the IPA's version (ipa-info.ts), and the builds App Store Connect already has of it
//     (GET /v1/builds?filter[app]&filter[version]&filter[preReleaseVersion.version]): a build
//     Apple has is not uploaded again, which Apple would refuse as a redundant binary;
//  3. the upload with Apple's own tool: `xcrun altool --upload-app -f <ipa> -t ios --apiKey
//     <key id> --apiIssuer <issuer id>`, the .p8 found as AuthKey_<key id>.p8 in
//     API_PRIVATE_KEYS_DIR (altool(1));
//  4. waiting for processing (the build's processingState VALID, not FAILED or INVALID);
//  5. "What to Test" per locale (betaBuildLocalizations: PATCH the existing, POST the new);
//  6. the beta groups (GET /v1/betaGroups by name; POST /v1/builds/{id}/relationships/betaGroups);
//  7. optionally beta App Review (POST /v1/betaAppReviewSubmissions), unless it was submitted.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SignJWT, importPKCS8 } from "jose";
import type { AppStoreConnectConfig } from "../../lib/publishing/publishers.ts";
import type { StoreAnswer } from "../../lib/publishing/wire.ts";
import { PublishFailure, type PublishContext } from "./context.ts";
import { storeRequest, StoreRefusal } from "./http.ts";
import { IpaError, readIpaInfo, type IpaInfo } from "./ipa-info.ts";
import { limitNotes } from "./notes.ts";

/** "What to Test" is at most 4,000 characters (BetaBuildLocalization.whatToTest). */
const NOTES_MAX = 4000;

interface Build {
  id: string;
  attributes?: { version?: string; processingState?: string; uploadedDate?: string };
}

export async function publishAppStoreConnect(ctx: PublishContext): Promise<StoreAnswer> {
  const p = ctx.publisher as AppStoreConnectConfig;
  const ipa = ctx.artifacts.find((a) => a.role === "binary")!;
  let info: IpaInfo;
  try {
    info = readIpaInfo(ipa.file);
  } catch (error) {
    if (error instanceof IpaError) throw new PublishFailure(`${ipa.path} is not an IPA Roost can read: ${error.message}`);
    throw error;
  }
  ctx.log(`[app store connect] ${ipa.path}: ${info.bundleId} ${info.shortVersion} (${info.version})`);
  const pem = ctx.secret(p.private_key).text;
  const api = new AscApi(ctx, await apiToken(ctx, p, pem));
  try {
    // 2-3. Upload unless Apple has this version already.
    let build = await api.findBuild(p.app_id, info);
    if (build) {
      ctx.log(`[app store connect] build ${info.shortVersion} (${info.version}) is already in App Store Connect: not uploaded again`);
    } else {
      await altoolUpload(ctx, p, pem, ipa.file);
      // 4. Apple lists the build a while after the upload, then processes it.
    }
    build = await api.waitForProcessing(p, info);
    // 5. What to Test.
    const notes = limitNotes(ctx.notes, NOTES_MAX, ctx.log, "TestFlight");
    if (Object.keys(notes).length) await api.setWhatToTest(build.id, notes);
    // 6. Beta groups.
    if (p.beta_groups.length) await api.addToGroups(p.app_id, build.id, p.beta_groups);
    // 7. Beta App Review.
    if (p.submit_for_review) await api.submitForReview(build.id);
    const groups = p.beta_groups.length ? `, in ${p.beta_groups.join(", ")}` : "";
    return {
      summary: `TestFlight has ${info.shortVersion} (${info.version}) of app ${p.app_id}${groups}${p.submit_for_review ? ", submitted for beta review" : ""}`,
      version: `${info.shortVersion} (${info.version})`,
      url: `https://appstoreconnect.apple.com/apps/${p.app_id}/testflight/ios`,
      details: { build_id: build.id, bundle_id: info.bundleId },
    };
  } catch (error) {
    if (!(error instanceof StoreRefusal) || error.status === 0) throw error;
    const said = `App Store Connect said: ${error.status} ${error.storeMessage}`;
    if (error.status === 401)
      throw new PublishFailure(`App Store Connect refused the API key ${p.key_id} (issuer ${p.issuer_id}): is it revoked, or the .p8 another key's? ${said}`);
    if (error.status === 403) throw new PublishFailure(`the API key ${p.key_id} may not do this: give it the App Manager role (docs/publishing.md). ${said}`);
    if (error.status === 404) throw new PublishFailure(`App Store Connect does not know app ${p.app_id} (its Apple ID, under App Information). ${said}`);
    throw new PublishFailure(said);
  }
}

async function apiToken(ctx: PublishContext, p: AppStoreConnectConfig, pem: string): Promise<string> {
  let key;
  try {
    key = await importPKCS8(pem.trim(), "ES256");
  } catch {
    throw new PublishFailure(`secret ${p.private_key} is not an App Store Connect API key (.p8, a PKCS#8 EC P-256 key)`);
  }
  const now = Math.floor(Date.now() / 1000);
  const jwt = await new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: p.key_id, typ: "JWT" })
    .setIssuer(p.issuer_id)
    .setAudience("appstoreconnect-v1")
    .setIssuedAt(now)
    .setExpirationTime(now + 1200)
    .sign(key);
  ctx.mask(jwt);
  return jwt;
}

/** altool(1) with the key in a private_keys directory of this publish's private directory. */
async function altoolUpload(ctx: PublishContext, p: AppStoreConnectConfig, pem: string, file: string): Promise<void> {
  const keys = join(ctx.dir, "private_keys");
  mkdirSync(keys, { mode: 0o700 });
  writeFileSync(join(keys, `AuthKey_${p.key_id}.p8`), pem, { mode: 0o600 });
  const command = [
    ...ctx.endpoints.altool,
    "--upload-app",
    "-f",
    file,
    "-t",
    "ios",
    "--apiKey",
    p.key_id,
    "--apiIssuer",
    p.issuer_id,
    "--output-format",
    "json",
  ];
  ctx.log(
    `[app store connect] ${command.slice(0, ctx.endpoints.altool.length).join(" ")} --upload-app -f ${file.split("/").pop()} -t ios --apiKey ${p.key_id} --apiIssuer ${p.issuer_id}`,
  );
  const child = Bun.spawn(command, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", API_PRIVATE_KEYS_DIR: keys },
    stdout: "pipe",
    stderr: "pipe",
    signal: ctx.signal,
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  for (const line of `${out}\n${err}`.split("\n")) if (line.trim()) ctx.log(`[altool] ${line}`);
  if (code !== 0) {
    let said = (err || out).trim().split("\n").pop() ?? "";
    try {
      const parsed = JSON.parse(out) as { "product-errors"?: { message?: string }[] };
      said =
        parsed["product-errors"]
          ?.map((e) => e.message)
          .filter(Boolean)
          .join("; ") || said;
    } catch {
      // altool printed text, not JSON: its last line is kept.
    }
    throw new PublishFailure(`altool could not upload the IPA (exit code ${code}): ${said}`);
  }
}

class AscApi {
  constructor(
    private readonly ctx: PublishContext,
    private readonly token: string,
  ) {}

  #call<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
    return storeRequest<T>(this.ctx, "app store connect", `${this.ctx.endpoints.appStoreConnect}${path}`, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${this.token}`, ...(init.body ? { "content-type": "application/json" } : {}) },
      body: init.body ? JSON.stringify(init.body) : null,
      label: path.split("?")[0],
    });
  }

  async findBuild(appId: string, info: IpaInfo): Promise<Build | null> {
    const q = new URLSearchParams({
      "filter[app]": appId,
      "filter[version]": info.version,
      "filter[preReleaseVersion.version]": info.shortVersion,
      limit: "1",
    });
    return (await this.#call<{ data: Build[] }>(`/v1/builds?${q}`)).data[0] ?? null;
  }

  async waitForProcessing(p: AppStoreConnectConfig, info: IpaInfo): Promise<Build> {
    const deadline = Date.now() + p.processing_timeout_seconds * 1000;
    let wait = 2000;
    let said = "";
    for (;;) {
      const build = await this.findBuild(p.app_id, info);
      const state = build?.attributes?.processingState ?? "not listed yet";
      if (state !== said) this.ctx.log(`[app store connect] build ${info.shortVersion} (${info.version}): ${state}`);
      said = state;
      if (build && state === "VALID") return build;
      if (build && (state === "FAILED" || state === "INVALID"))
        throw new PublishFailure(
          `Apple could not process build ${info.shortVersion} (${info.version}): ${state}; App Store Connect's e-mail to the account holder says why`,
        );
      if (Date.now() + wait > deadline)
        throw new PublishFailure(
          `build ${info.shortVersion} (${info.version}) was not processed within ${p.processing_timeout_seconds} s (last state: ${state}); raise processing_timeout_seconds, then retry: the upload is not repeated`,
        );
      await Bun.sleep(wait);
      wait = Math.min(wait * 2, 30_000);
    }
  }

  async setWhatToTest(buildId: string, notes: Record<string, string>): Promise<void> {
    const existing = (await this.#call<{ data: { id: string; attributes?: { locale?: string } }[] }>(`/v1/builds/${buildId}/betaBuildLocalizations`)).data;
    for (const [locale, whatToTest] of Object.entries(notes)) {
      const found = existing.find((l) => l.attributes?.locale === locale);
      if (found)
        await this.#call(`/v1/betaBuildLocalizations/${found.id}`, {
          method: "PATCH",
          body: { data: { type: "betaBuildLocalizations", id: found.id, attributes: { whatToTest } } },
        });
      else
        await this.#call(`/v1/betaBuildLocalizations`, {
          method: "POST",
          body: {
            data: { type: "betaBuildLocalizations", attributes: { locale, whatToTest }, relationships: { build: { data: { type: "builds", id: buildId } } } },
          },
        });
    }
    this.ctx.log(`[app store connect] What to Test set in ${Object.keys(notes).join(", ")}`);
  }

  async addToGroups(appId: string, buildId: string, names: string[]): Promise<void> {
    const q = new URLSearchParams({ "filter[app]": appId, "filter[name]": names.join(","), limit: "200" });
    const groups = (await this.#call<{ data: { id: string; attributes?: { name?: string } }[] }>(`/v1/betaGroups?${q}`)).data;
    const missing = names.filter((n) => !groups.some((g) => g.attributes?.name === n));
    if (missing.length)
      throw new PublishFailure(
        `app ${appId} has no TestFlight group ${missing.join(", ")} (it has ${groups.map((g) => g.attributes?.name).join(", ") || "none of those"}); create it in App Store Connect first`,
      );
    const ids = names.map((n) => groups.find((g) => g.attributes?.name === n)!.id);
    await this.#call(`/v1/builds/${buildId}/relationships/betaGroups`, { method: "POST", body: { data: ids.map((id) => ({ type: "betaGroups", id })) } });
    this.ctx.log(`[app store connect] added to ${names.join(", ")}`);
  }

  async submitForReview(buildId: string): Promise<void> {
    const existing = await this.#call<{ data: { id: string } | null }>(`/v1/builds/${buildId}/betaAppReviewSubmission`);
    if (existing.data) {
      this.ctx.log(`[app store connect] already submitted for beta App Review`);
      return;
    }
    await this.#call(`/v1/betaAppReviewSubmissions`, {
      method: "POST",
      body: { data: { type: "betaAppReviewSubmissions", relationships: { build: { data: { type: "builds", id: buildId } } } } },
    });
    this.ctx.log(`[app store connect] submitted for beta App Review`);
  }
}
