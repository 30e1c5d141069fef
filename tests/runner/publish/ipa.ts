// Test IPAs: a ZIP with Payload/Runner.app/Info.plist (XML or binary), written by Python's
// zipfile and plistlib, as Xcode's export writes a real one.
import { join } from "node:path";

export function writeIpa(
  dir: string,
  name: string,
  info: { bundleId: string; version: string; shortVersion: string },
  format: "xml" | "binary" = "binary",
  compress = true,
): string {
  const file = join(dir, name);
  const script = `import plistlib,sys,zipfile
fmt = plistlib.FMT_BINARY if sys.argv[2] == "binary" else plistlib.FMT_XML
plist = plistlib.dumps({"CFBundleIdentifier": sys.argv[3], "CFBundleVersion": sys.argv[4], "CFBundleShortVersionString": sys.argv[5], "CFBundleName": "Runner \\u00e9t\\u00e9", "UIRequiredDeviceCapabilities": ["arm64"]}, fmt=fmt)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED if sys.argv[6] == "1" else zipfile.ZIP_STORED) as z:
    z.writestr("Payload/Runner.app/Runner", b"\\xcf\\xfa\\xed\\xfe fake binary")
    z.writestr("Payload/Runner.app/Frameworks/Info.plist", b"not the app's")
    z.writestr("Payload/Runner.app/Info.plist", plist)
`;
  const out = Bun.spawnSync(["python3", "-c", script, file, format, info.bundleId, info.version, info.shortVersion, compress ? "1" : "0"]);
  if (out.exitCode !== 0) throw new Error(out.stderr.toString());
  return file;
}
