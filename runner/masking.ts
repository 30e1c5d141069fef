// Masking secret values in build output (docs/runners.md "Secrets"), in their base64 forms too
// (base64Forms below). Output is shipped line by line, so a multi-line secret (a PEM key, a JSON
// credential) would slip through a whole-value match: each of its lines is masked too. Very short pieces are left alone, since masking "a"
// or "{" everywhere would make logs unreadable (woodpecker#7103).
export const MASK = "********";
const MIN_PIECE = 4;

/** What to mask for these secret values, and for the bytes of secret files (their base64 forms, and their text when they are text). */
export function maskNeedles(secrets: string[], files: Buffer[] = []): string[] {
  const needles = new Set<string>();
  for (const bytes of files) {
    for (const encoded of base64Forms(bytes)) needles.add(encoded);
    const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
    if (!text.includes("\uFFFD")) secrets = [...secrets, text];
  }
  for (const secret of secrets) {
    if (secret.length >= MIN_PIECE) needles.add(secret);
    for (const piece of secret.split(/\r?\n/)) {
      const trimmed = piece.trim();
      if (trimmed.length >= MIN_PIECE) needles.add(trimmed);
    }
    for (const encoded of base64Forms(Buffer.from(secret, "utf8"))) needles.add(encoded);
  }
  // Longest first, so a whole value wins over its own lines.
  return [...needles].sort((a, b) => b.length - a.length);
}

export function maskLine(line: string, needles: string[]): string {
  let out = line;
  for (const needle of needles) if (out.includes(needle)) out = out.split(needle).join(MASK);
  return out;
}

/** Shortest base64 run worth masking: shorter ones would match ordinary words. */
const MIN_BASE64 = 8;
/** `base64` (coreutils) and PEM bodies wrap lines at 76 and 64 characters. */
const WRAP_WIDTHS = [76, 64];

/**
 * The base64 forms a secret takes in output (`echo $SECRET | base64`, an Authorization header,
 * a value inside an encoded blob): a secret's bytes encode differently at each of the three
 * offsets modulo 3 where they may start, so each alignment's characters that depend on the
 * secret alone are masked, in standard and URL-safe alphabets, and the wrapped lines of its
 * encoding (actions/runner#291 asked for the same in GitHub Actions).
 */
export function base64Forms(bytes: Buffer): string[] {
  const forms = new Set<string>();
  if (bytes.length < 4) return [];
  const whole = bytes.toString("base64");
  forms.add(whole);
  for (const width of WRAP_WIDTHS) {
    if (whole.length <= width) continue;
    for (let at = 0; at < whole.length; at += width) {
      const line = whole.slice(at, at + width);
      if (line.length >= MIN_BASE64) forms.add(line);
    }
  }
  for (let offset = 0; offset < 3; offset++) {
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]);
    const full = Math.floor(shifted.length / 3) * 4;
    // Characters of the first group mix in whatever precedes the secret; those of a partial last
    // group mix in what follows it.
    const core = shifted.toString("base64").slice(offset === 0 ? 0 : 4, full);
    if (core.length >= MIN_BASE64) forms.add(core);
  }
  for (const form of [...forms]) forms.add(form.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""));
  return [...forms].filter((f) => f.length >= MIN_BASE64);
}
