// Masking secret values in build output (docs/runners.md "Secrets"). Output is shipped line by
// line, so a multi-line secret (a PEM key, a JSON credential) would slip through a whole-value
// match: each of its lines is masked too. Very short pieces are left alone, since masking "a"
// or "{" everywhere would make logs unreadable (woodpecker#7103).
export const MASK = "********";
const MIN_PIECE = 4;

export function maskNeedles(secrets: string[]): string[] {
  const needles = new Set<string>();
  for (const secret of secrets) {
    if (secret.length >= MIN_PIECE) needles.add(secret);
    for (const piece of secret.split(/\r?\n/)) {
      const trimmed = piece.trim();
      if (trimmed.length >= MIN_PIECE) needles.add(trimmed);
    }
  }
  // Longest first, so a whole value wins over its own lines.
  return [...needles].sort((a, b) => b.length - a.length);
}

export function maskLine(line: string, needles: string[]): string {
  let out = line;
  for (const needle of needles) if (out.includes(needle)) out = out.split(needle).join(MASK);
  return out;
}
