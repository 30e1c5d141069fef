// Which Flutter a build uses, and installing it when the runner does not have it
// (docs/runners.md "Flutter versions").
//
// 1. The version: the pipeline's flutter_version; `fvm` means the one the repository's .fvmrc
//    names (fvm 3's `{"flutter": "3.27.1"}`, or the older .fvm/fvm_config.json
//    `{"flutterSdkVersion": …}`), read by the runner itself (fvm need not be installed).
// 2. The SDK: <sdks>/<version> when it is there (installed earlier, or put there by hand); for a
//    channel without one, the flutter on PATH; otherwise it is installed. A channel is installed
//    only where the operator named a Flutter repository (ROOST_FLUTTER_GIT_URL): every pipeline
//    has `stable` unless it says otherwise, and a runner must not download a whole Flutter SDK
//    for pipelines that never asked for one. A version (X.Y.Z) is always an explicit ask.
// 3. Installing: from the Flutter SDK's git repository (ROOST_FLUTTER_GIT_URL, for mirrors), the
//    way Flutter's own manual install does (a clone at the version's tag, or the channel's
//    branch). One bare mirror, <sdks>/.flutter.git, holds the objects of every version: each SDK
//    is a `git clone --shared` of it (its objects are borrowed through
//    .git/objects/info/alternates, so a second version costs only its checkout). An install
//    is built beside its final place and renamed into it, so an interrupted one is never used.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FlutterSdkUsed } from "../../lib/runners/protocol-wire.ts";

export interface FlutterSdk {
  /** A directory to put first on PATH, or null to use what PATH has. */
  path: string | null;
  /** The command that runs flutter. */
  flutter: string;
  /** Why this runner cannot build with the asked version; null when it can. */
  error: string | null;
}

/** Upstream Flutter; ROOST_FLUTTER_GIT_URL points elsewhere (a mirror). */
export const DEFAULT_FLUTTER_GIT_URL = "https://github.com/flutter/flutter.git";
export const MIRROR_DIR = ".flutter.git";

const VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$/;
const CHANNEL = /^(stable|beta|main|master)$/;

/** A channel (stable, beta, main, master), not a version. */
export function isChannel(version: string): boolean {
  return CHANNEL.test(version);
}

/** The version a build asks for: the pipeline's, or for `fvm` what the checkout's .fvmrc names. */
export function requestedVersion(flutterVersion: string, workspace: string): { version: string; from: string } | { error: string } {
  if (flutterVersion !== "fvm") return { version: flutterVersion, from: "the pipeline's flutter_version" };
  for (const [file, field] of [
    [".fvmrc", "flutter"],
    [join(".fvm", "fvm_config.json"), "flutterSdkVersion"],
  ] as const) {
    const path = join(workspace, file);
    if (!existsSync(path)) continue;
    let value: unknown;
    try {
      value = (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>)[field];
    } catch {
      return { error: `flutter_version is fvm, but ${file} is not valid JSON` };
    }
    if (typeof value !== "string" || !(VERSION.test(value) || CHANNEL.test(value))) {
      return { error: `flutter_version is fvm, but ${file} names no Flutter version or channel in "${field}" (found ${JSON.stringify(value ?? null)})` };
    }
    return { version: value, from: file };
  }
  return { version: "stable", from: "no .fvmrc in the repository: stable" };
}

export type SdkPlan =
  | { kind: "dir"; dir: string; source: "reused" | "sdks_dir" }
  | { kind: "path" }
  | { kind: "install"; dir: string; ref: string; channel: boolean }
  | { kind: "error"; error: string };

/** Where a version comes from on this runner (pure: it looks, installs nothing). */
export function planSdk(version: string, sdks: string, installChannels: boolean, pathDirs: string[] = (process.env.PATH ?? "").split(":")): SdkPlan {
  const channel = CHANNEL.test(version);
  if (!channel && !VERSION.test(version))
    return { kind: "error", error: `flutter_version ${JSON.stringify(version)} is neither a version like 3.27.1 nor a channel` };
  const dir = join(sdks, version);
  if (existsSync(join(dir, "bin", "flutter"))) {
    return { kind: "dir", dir, source: existsSync(join(dir, ".git", "objects", "info", "alternates")) ? "reused" : "sdks_dir" };
  }
  // A channel keeps today's meaning on a runner with Flutter installed: the flutter on PATH.
  if (channel && (!installChannels || pathDirs.some((d) => d && existsSync(join(d, "flutter"))))) return { kind: "path" };
  return { kind: "install", dir, ref: version, channel };
}

/** A single-quoted shell word. */
const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

/**
 * The commands that install `ref` into `dir` (run as the flutter_install step): the shared mirror
 * is cloned once and fetched only when it lacks the ref; the SDK is a shared clone of it whose
 * origin is the Flutter repository again (so `flutter upgrade` and `flutter channel` work).
 */
export function installCommands(plan: Extract<SdkPlan, { kind: "install" }>, sdks: string, gitUrl: string): string[] {
  const mirror = q(join(sdks, MIRROR_DIR));
  const tmp = q(`${plan.dir}.installing`);
  const wanted = plan.channel ? `refs/heads/${plan.ref}` : `refs/tags/${plan.ref}`;
  return [
    `mkdir -p ${q(sdks)}`,
    `if [ -d ${mirror} ]; then git -C ${mirror} rev-parse -q --verify ${q(`${wanted}^{commit}`)} >/dev/null || { echo "fetching ${plan.ref} into the shared Flutter mirror"; git -C ${mirror} fetch --quiet --prune origin '+refs/heads/*:refs/heads/*' '+refs/tags/*:refs/tags/*'; }; else echo "cloning the Flutter repository ${gitUrl.replace(/\/\/[^@/]*@/, "//")} into the shared mirror"; git clone --mirror --quiet ${q(gitUrl)} ${mirror}; fi`,
    `git -C ${mirror} rev-parse -q --verify ${q(`${wanted}^{commit}`)} >/dev/null || { echo "the Flutter repository has no ${plan.channel ? "branch" : "tag"} ${plan.ref}" >&2; exit 1; }`,
    `rm -rf ${tmp} && git clone --quiet --shared --no-checkout ${mirror} ${tmp}`,
    plan.channel
      ? `git -C ${tmp} checkout --quiet -B ${q(plan.ref)} ${q(`origin/${plan.ref}`)}`
      : `git -C ${tmp} -c advice.detachedHead=false checkout --quiet --detach ${q(wanted)}`,
    `git -C ${tmp} remote set-url origin ${q(gitUrl)}`,
    `mv -T ${tmp} ${q(plan.dir)} && echo "installed Flutter ${plan.ref} in ${plan.dir} ($(git -C ${q(plan.dir)} rev-parse --short HEAD))"`,
  ];
}

/** What the build records about its SDK (reported with the job's finish, shown on the build). */
export function sdkUsed(requested: string, dir: string | null, source: FlutterSdkUsed["source"]): FlutterSdkUsed {
  if (dir === null) return { requested, version: requested, source, revision: null };
  const git = (...args: string[]) => {
    const r = Bun.spawnSync(["git", "-C", dir, ...args], { stdout: "pipe", stderr: "ignore" });
    return r.exitCode === 0 ? r.stdout.toString().trim() : null;
  };
  return { requested, version: git("describe", "--tags", "--always") ?? requested, source, revision: git("rev-parse", "HEAD") };
}
