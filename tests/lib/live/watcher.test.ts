// The one watcher of changes made through other daemon processes (lib/live/watcher.ts): a key is
// checked on a timer while anyone holds it, one run at a time however many hold it, at once on an
// in-process event it asks for, and not at all once released or closed.
import { describe, expect, test } from "bun:test";
import { EventBus } from "../../../lib/daemon/events.ts";
import { Watcher } from "../../../lib/live/watcher.ts";
import { pollUntil } from "../../helpers/poll.ts";

/** A check that counts its runs and how many ran at the same time. */
function counted(delayMs = 0) {
  const c = { runs: 0, running: 0, most: 0 };
  const check = async () => {
    c.runs++;
    c.most = Math.max(c.most, ++c.running);
    await Bun.sleep(delayMs);
    c.running--;
  };
  return { c, check };
}

describe("Watcher", () => {
  test("many holds of one key share one check on one timer; the last release stops it", async () => {
    const watcher = new Watcher(new EventBus());
    const { c, check } = counted();
    // A long period first: only the first hold's check runs at once, none for the other 49
    // (a short one could come due while 50 holds are made on a loaded machine).
    const holds = Array.from({ length: 50 }, () => watcher.hold("log:b1", { everyMs: 10_000, check }));
    await holds[49]!.first;
    expect(c.runs).toBe(1);
    for (const h of holds) h.release();
    expect(watcher.isHeld("log:b1")).toBe(false);

    // A short period: about one run every 50 ms for 50 holds together, never one per hold.
    const started = performance.now();
    const again = Array.from({ length: 50 }, () => watcher.hold("log:b2", { everyMs: 50, check }));
    // Until two periods have run (a sleep of 260 ms saw only one when the host stalled the timers).
    await pollUntil(
      "two timed checks",
      () => c.runs - 1,
      (n) => n >= 2,
      5000,
      10,
    );
    const ran = c.runs - 1;
    const periods = Math.floor((performance.now() - started) / 50);
    expect(ran).toBeLessThanOrEqual(periods + 1); // timers only ever run late
    for (const h of again.slice(1)) h.release();
    expect(watcher.isHeld("log:b2")).toBe(true);
    again[0]!.release();
    again[0]!.release(); // twice is once
    expect(watcher.isHeld("log:b2")).toBe(false);
    const after = c.runs;
    await Bun.sleep(150);
    expect(c.runs).toBe(after);
  });

  test("a check asked for while one runs does not run beside it: one more runs after it", async () => {
    const watcher = new Watcher(new EventBus());
    const { c, check } = counted(30);
    const hold = watcher.hold("builds", { everyMs: 10_000, check });
    await Promise.all([watcher.check("builds"), watcher.check("builds"), watcher.check("builds")]);
    expect(c.most).toBe(1);
    expect(c.runs).toBe(2); // the first, then one for the three asked meanwhile
    hold.release();
  });

  test("an in-process event the watch asks for runs its check at once; others do not", async () => {
    const events = new EventBus();
    const watcher = new Watcher(events);
    const { c, check } = counted();
    const hold = watcher.hold("log:b1", { everyMs: 10_000, check, onEvent: (e) => e.type === "job.finished" && e.build_id === "b1" });
    await hold.first;
    events.publish({ type: "job.finished", build_id: "b2", job_id: "j" });
    events.publish({ type: "build.queued", build_id: "b1", project_id: "p" });
    await Bun.sleep(10);
    expect(c.runs).toBe(1);
    events.publish({ type: "job.finished", build_id: "b1", job_id: "j" });
    await Bun.sleep(10);
    expect(c.runs).toBe(2);
    hold.release();
  });

  test("a failing check is let go and the next tick runs again", async () => {
    const watcher = new Watcher(new EventBus());
    let runs = 0;
    const hold = watcher.hold("builds", {
      everyMs: 30,
      check: async () => {
        runs++;
        throw new Error("database busy");
      },
    });
    await hold.first;
    await Bun.sleep(100);
    expect(runs).toBeGreaterThanOrEqual(2);
    hold.release();
  });

  test("close stops every check, and holds after it start none", async () => {
    const events = new EventBus();
    const watcher = new Watcher(events);
    const a = counted();
    const b = counted();
    watcher.hold("log:b1", { everyMs: 20, check: a.check, onEvent: () => true });
    watcher.hold("builds", { everyMs: 20, check: b.check });
    watcher.close();
    const runs = a.c.runs + b.c.runs;
    events.publish({ type: "job.finished", build_id: "b1", job_id: "j" });
    watcher.hold("log:b2", { everyMs: 20, check: a.check });
    await Bun.sleep(80);
    expect(a.c.runs + b.c.runs).toBe(runs);
    expect(watcher.isHeld("log:b1")).toBe(false);
  });
});
