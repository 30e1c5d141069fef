// Which Flutter a build uses (docs/runners.md "Flutter versions").
import { existsSync } from "node:fs";
import { join } from "node:path";

export interface FlutterSdk {
  /** A directory to put first on PATH, or null to use what PATH has. */
  path: string | null;
  /** The command that runs flutter. */
  flutter: string;
  /** Why this runner cannot build with the asked version; null when it can. */
  error: string | null;
}

/**
 * A pinned X.Y.Z needs <ROOST_FLUTTER_SDKS>/<version>/bin/flutter; `fvm` runs `fvm flutter` (fvm
 * reads the repository's .fvmrc) and needs fvm on PATH; channel names use the flutter on PATH. A
 * missing SDK is a clear failure, before anything runs.
 */
export function flutterSdk(version: string, sdks: string | undefined, pathDirs: string[] = (process.env.PATH ?? "").split(":")): FlutterSdk {
  if (version === "fvm") {
    const fvm = pathDirs.some((d) => d && existsSync(join(d, "fvm")));
    return { path: null, flutter: "fvm flutter", error: fvm ? null : "flutter_version is fvm, but fvm is not installed on this runner (not on PATH)" };
  }
  if (!/^\d+\.\d+\.\d+/.test(version)) return { path: null, flutter: "flutter", error: null };
  const bin = sdks ? join(sdks, version, "bin") : null;
  if (bin && existsSync(join(bin, "flutter"))) return { path: bin, flutter: "flutter", error: null };
  return { path: null, flutter: "flutter", error: `Flutter ${version} is not installed on this runner (looked for ${bin ? join(bin, "flutter") : "ROOST_FLUTTER_SDKS/<version>/bin/flutter; ROOST_FLUTTER_SDKS is not set"})` };
}
