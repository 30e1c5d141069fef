// The runner's pure parts: secret masking across line breaks, and stopping a whole process tree.
import { describe, expect, test } from "bun:test";
import { MASK, maskLine, maskNeedles } from "../../runner/masking.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupAlive, runCommand } from "../../runner/process.ts";
import { pollUntil } from "../helpers/poll.ts";

describe("masking", () => {
  test("whole values and every line of a multi-line secret are masked; short pieces are not", () => {
    const pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkq\nhkiG9w0BAQEFAASC\n-----END KEY-----";
    const needles = maskNeedles(["hunter2-password", pem, "ab"]);
    expect(maskLine("password is hunter2-password!", needles)).toBe(`password is ${MASK}!`);
    for (const line of pem.split("\n")) expect(maskLine(line, needles)).toBe(MASK);
    expect(maskLine("ab cd", needles)).toBe("ab cd");
    expect(maskLine("cat key: MIIEvQIBADANBgkq (line 2)", needles)).toBe(`cat key: ${MASK} (line 2)`);
  });
});

describe("process trees", () => {
  test("output arrives line by line with its stream, and the exit code is kept", async () => {
    const lines: string[] = [];
    const cmd = runCommand("echo one; echo two >&2; printf 'no newline'; exit 3", {
      cwd: "/tmp",
      env: { PATH: process.env.PATH ?? "" },
      onLine: (s, t) => lines.push(`${s}:${t}`),
    });
    expect(await cmd.done).toEqual({ exitCode: 3, signal: null });
    expect(lines.sort()).toEqual(["stderr:two", "stdout:no newline", "stdout:one"]);
  });

  test("stop ends the whole group: a child that ignores TERM is killed after the grace period", async () => {
    const cmd = runCommand("trap '' TERM; (trap '' TERM; sleep 30) & sleep 30", { cwd: "/tmp", env: { PATH: process.env.PATH ?? "" }, onLine: () => {} });
    await Bun.sleep(200);
    expect(groupAlive(cmd.pid)).toBe(true);
    const started = Date.now();
    await cmd.stop(500);
    const result = await cmd.done;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.exitCode).not.toBe(0);
    // The KILL has been sent; a killed process is gone once the kernel has run its exit.
    await pollUntil(
      "the group to end",
      () => groupAlive(cmd.pid),
      (alive) => !alive,
      5000,
      20,
    );
  });
});

describe("background processes", () => {
  test("a command that leaves `sleep 3600 &` behind is done when its shell exits; its output keeps arriving; stop ends the leftover", async () => {
    // The background process writes once the test creates `go`, after `done`: no race between its
    // line and the shell's exit (a `sleep 0.4` there left 150 ms between them, which a loaded
    // host could use up, and its line then arrived before `done`).
    const dir = mkdtempSync(join(tmpdir(), "roost-background-"));
    const lines: string[] = [];
    const cmd = runCommand("(while [ ! -e go ]; do sleep 0.02; done; echo from-background; exec sleep 3600) & echo foreground done", {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "" },
      onLine: (_s, t) => lines.push(t),
    });
    try {
      // A command that waited for its background process would never be done: it waits for `go`.
      const result = await Promise.race([cmd.done, Bun.sleep(20_000).then(() => "still running")]);
      expect(result).toEqual({ exitCode: 0, signal: null });
      expect(lines).toEqual(["foreground done"]);
      expect(groupAlive(cmd.pid)).toBe(true);
      writeFileSync(join(dir, "go"), "");
      await pollUntil(
        "the background line",
        () => [...lines],
        (l) => l.length > 1,
        10_000,
        20,
      );
      expect(lines).toEqual(["foreground done", "from-background"]);
      await cmd.stop(500);
      await pollUntil(
        "the leftover to end",
        () => groupAlive(cmd.pid),
        (alive) => !alive,
        5000,
        20,
      );
    } finally {
      await cmd.stop(0);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("choosing the Flutter SDK", () => {
  test("a version in the SDK directory is used; a missing one is installed; a channel uses the flutter on PATH; fvm reads .fvmrc", async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { planSdk, requestedVersion } = await import("../../runner/job/flutter.ts");
    const sdks = mkdtempSync(join(tmpdir(), "roost-sdks-"));
    try {
      mkdirSync(join(sdks, "3.24.5", "bin"), { recursive: true });
      writeFileSync(join(sdks, "3.24.5", "bin", "flutter"), "");
      expect(planSdk("3.24.5", sdks, false)).toEqual({ kind: "dir", dir: join(sdks, "3.24.5"), source: "sdks_dir" });
      expect(planSdk("3.99.0", sdks, false)).toEqual({ kind: "install", dir: join(sdks, "3.99.0"), ref: "3.99.0", channel: false });
      mkdirSync(join(sdks, "tools"));
      writeFileSync(join(sdks, "tools", "flutter"), "");
      expect(planSdk("stable", sdks, true, [join(sdks, "tools")])).toEqual({ kind: "path" });
      expect(planSdk("beta", sdks, true, ["/nonexistent"])).toEqual({ kind: "install", dir: join(sdks, "beta"), ref: "beta", channel: true });
      // Without ROOST_FLUTTER_GIT_URL, a channel (every pipeline's default) is never downloaded.
      expect(planSdk("beta", sdks, false, ["/nonexistent"])).toEqual({ kind: "path" });

      const repo = join(sdks, "repo");
      mkdirSync(join(repo, ".fvm"), { recursive: true });
      expect(requestedVersion("3.24.5", repo)).toEqual({ version: "3.24.5", from: "the pipeline's flutter_version" });
      expect(requestedVersion("fvm", repo)).toEqual({ version: "stable", from: "no .fvmrc in the repository: stable" });
      writeFileSync(join(repo, ".fvm", "fvm_config.json"), JSON.stringify({ flutterSdkVersion: "3.22.0" }));
      expect(requestedVersion("fvm", repo)).toEqual({ version: "3.22.0", from: ".fvm/fvm_config.json" });
      writeFileSync(join(repo, ".fvmrc"), JSON.stringify({ flutter: "3.27.1" }));
      expect(requestedVersion("fvm", repo)).toEqual({ version: "3.27.1", from: ".fvmrc" });
      writeFileSync(join(repo, ".fvmrc"), JSON.stringify({ flutter: "latest; rm -rf /" }));
      expect(requestedVersion("fvm", repo)).toEqual({
        error: 'flutter_version is fvm, but .fvmrc names no Flutter version or channel in "flutter" (found "latest; rm -rf /")',
      });
    } finally {
      rmSync(sdks, { recursive: true, force: true });
    }
  });
});
