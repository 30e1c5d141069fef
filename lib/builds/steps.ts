// step_results of a build: one entry per step name, in the order steps first reported.
import type { Db } from "../db/client.ts";
import { inTransaction, one } from "../db/client.ts";
import type { StepResult } from "./store.ts";

export async function recordStepResult(db: Db, buildId: string, step: StepResult): Promise<StepResult[]> {
  return inTransaction(db, async (tx) => {
    const row = await one(tx, "SELECT step_results FROM builds WHERE id = ?", [buildId]);
    const results = JSON.parse(String(row!.step_results)) as StepResult[];
    const at = results.findIndex((r) => r.name === step.name);
    if (at >= 0) results[at] = step;
    else results.push(step);
    await tx.execute({
      sql: "UPDATE builds SET step_results = ?, updated_at = ? WHERE id = ?",
      args: [JSON.stringify(results), step.finished_at ?? step.started_at, buildId],
    });
    return results;
  });
}
