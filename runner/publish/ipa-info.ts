// An IPA's bundle id and versions, read from Payload/<App>.app/Info.plist inside it, so App Store
// Connect's builds can be found by the version altool uploaded (CFBundleVersion and
// CFBundleShortVersionString, https://developer.apple.com/documentation/bundleresources/information-property-list).
// An IPA is a ZIP file (PKWARE APPNOTE.TXT, https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT):
// the central directory at its end locates the entry, read alone (stored or deflated); the
// plist is XML or Apple's binary format (bplist00, as CFBinaryPList.c of Apple's CoreFoundation
// sources lays it out). Written here because no dependency reads either, and only a few fields are needed.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { inflateRawSync } from "node:zlib";

export interface IpaInfo {
  bundleId: string;
  version: string;
  shortVersion: string;
}

export class IpaError extends Error {}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const n = readSync(fd, buf, 0, length, position);
  return buf.subarray(0, n);
}

/** The bytes of the first entry whose name matches, or null. */
export function readZipEntry(file: string, wanted: RegExp): Buffer | null {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const tailLength = Math.min(size, 65_557);
    const tail = readAt(fd, size - tailLength, tailLength);
    let eocd = -1;
    for (let i = tail.length - 22; i >= 0; i--)
      if (tail.readUInt32LE(i) === 0x06054b50) {
        eocd = i;
        break;
      }
    if (eocd < 0) throw new IpaError("it is not a ZIP file (no end of central directory)");
    const entries = tail.readUInt16LE(eocd + 10);
    const dirSize = tail.readUInt32LE(eocd + 12);
    const dirOffset = tail.readUInt32LE(eocd + 16);
    if (dirOffset === 0xffffffff) throw new IpaError("ZIP64 archives are not read");
    const dir = readAt(fd, dirOffset, dirSize);
    for (let at = 0, n = 0; n < entries && at + 46 <= dir.length; n++) {
      if (dir.readUInt32LE(at) !== 0x02014b50) throw new IpaError("its central directory is damaged");
      const method = dir.readUInt16LE(at + 10);
      const compressed = dir.readUInt32LE(at + 20);
      const nameLength = dir.readUInt16LE(at + 28);
      const extraLength = dir.readUInt16LE(at + 30);
      const commentLength = dir.readUInt16LE(at + 32);
      const local = dir.readUInt32LE(at + 42);
      const name = dir.subarray(at + 46, at + 46 + nameLength).toString("utf8");
      at += 46 + nameLength + extraLength + commentLength;
      if (!wanted.test(name)) continue;
      const header = readAt(fd, local, 30);
      if (header.readUInt32LE(0) !== 0x04034b50) throw new IpaError(`the local header of ${name} is damaged`);
      const data = readAt(fd, local + 30 + header.readUInt16LE(26) + header.readUInt16LE(28), compressed);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new IpaError(`${name} is compressed with method ${method}, which is not read`);
    }
    return null;
  } finally {
    closeSync(fd);
  }
}

/** String values of a plist's top-level dictionary (XML or binary). */
export function plistStrings(bytes: Buffer): Record<string, string> {
  if (bytes.subarray(0, 8).toString("latin1") === "bplist00") return binaryPlistStrings(bytes);
  const text = bytes.toString("utf8");
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/<key>([^<]*)<\/key>\s*<string>([^<]*)<\/string>/g)) out[unescapeXml(m[1]!)] = unescapeXml(m[2]!);
  return out;
}

function unescapeXml(s: string): string {
  return s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");
}

function binaryPlistStrings(b: Buffer): Record<string, string> {
  const trailer = b.subarray(b.length - 32);
  const offsetSize = trailer[6]!;
  const refSize = trailer[7]!;
  const objects = Number(trailer.readBigUInt64BE(8));
  const top = Number(trailer.readBigUInt64BE(16));
  const table = Number(trailer.readBigUInt64BE(24));
  const uint = (at: number, size: number) => {
    let v = 0;
    for (let i = 0; i < size; i++) v = v * 256 + b[at + i]!;
    return v;
  };
  const offsetOf = (ref: number) => {
    if (ref >= objects) throw new IpaError("the binary plist refers to an object it does not have");
    return uint(table + ref * offsetSize, offsetSize);
  };
  /** An object's length: the marker's low nibble, or an int object after it when that is 0xF. */
  const lengthAt = (at: number): { length: number; start: number } => {
    const low = b[at]! & 0x0f;
    if (low !== 0x0f) return { length: low, start: at + 1 };
    const intSize = 1 << (b[at + 1]! & 0x0f);
    return { length: uint(at + 2, intSize), start: at + 2 + intSize };
  };
  const stringAt = (ref: number): string | null => {
    const at = offsetOf(ref);
    const kind = b[at]! >> 4;
    const { length, start } = lengthAt(at);
    if (kind === 0x5) return b.subarray(start, start + length).toString("latin1");
    if (kind === 0x6)
      return Buffer.from(b.subarray(start, start + length * 2))
        .swap16()
        .toString("utf16le");
    return null;
  };
  const dictAt = offsetOf(top);
  if (b[dictAt]! >> 4 !== 0xd) throw new IpaError("Info.plist's top object is not a dictionary");
  const { length, start } = lengthAt(dictAt);
  const out: Record<string, string> = {};
  for (let i = 0; i < length; i++) {
    const key = stringAt(uint(start + i * refSize, refSize));
    const value = stringAt(uint(start + (length + i) * refSize, refSize));
    if (key !== null && value !== null) out[key] = value;
  }
  return out;
}

export function readIpaInfo(file: string): IpaInfo {
  const plist = readZipEntry(file, /^Payload\/[^/]+\.app\/Info\.plist$/);
  if (!plist) throw new IpaError("it has no Payload/<App>.app/Info.plist");
  const values = plistStrings(plist);
  const bundleId = values.CFBundleIdentifier;
  const version = values.CFBundleVersion;
  const shortVersion = values.CFBundleShortVersionString;
  if (!bundleId || !version || !shortVersion) throw new IpaError("its Info.plist lacks CFBundleIdentifier, CFBundleVersion or CFBundleShortVersionString");
  return { bundleId, version, shortVersion };
}
