// A pipeline's page (docs/web-app.md "Pipeline charts"): its last builds as charts, build
// duration with queue time and the median, success rate, tests and failures, coverage and the
// size of each artifact, each with its numbers as a table too; and its flaky tests with their
// failure rate (docs/test-results.md).
import { useState } from "preact/hooks";
import { get, query } from "../api.ts";
import { LoadState, PageTitle, Table, useLoad } from "../components.tsx";
import { ago, bytes, dateTime, duration } from "../format.ts";
import { Chart, median } from "../charts.tsx";
import type { Pipeline, Project, TestInfo, Trend } from "../types.ts";

const FINISHED = new Set(["succeeded", "failed"]);

function Charts({ builds }: { builds: Trend[] }) {
  // Oldest first, left to right.
  const points = [...builds].reverse();
  const labels = points.map((p) => `#${p.build_number}`);
  const finished = points.filter((p) => FINISHED.has(p.status) && p.duration_ms !== null);
  const mid = median(finished.map((p) => p.duration_ms!));
  const slowest = finished.reduce<Trend | null>((a, p) => (!a || p.duration_ms! > a.duration_ms! ? p : a), null);
  const midQueue = median(points.filter((p) => p.queue_ms !== null).map((p) => p.queue_ms!));
  const ok = finished.filter((p) => p.status === "succeeded").length;
  // The success rate over the last 10 finished builds up to each point.
  const rolling = points.map((p, i) => {
    if (!FINISHED.has(p.status)) return null;
    const window = points
      .slice(0, i + 1)
      .filter((q) => FINISHED.has(q.status))
      .slice(-10);
    return Math.round((window.filter((q) => q.status === "succeeded").length / window.length) * 100);
  });
  const withTests = points.filter((p) => p.tests && p.tests.total > 0);
  const lastTests = withTests.at(-1)?.tests;
  const coverage = points.map((p) => p.tests?.coverage_percent ?? null);
  const covered = coverage.filter((c): c is number => c !== null);
  const names = [...new Set(points.flatMap((p) => p.artifacts.map((a) => a.path.split("/").pop()!)))].slice(0, 4);
  const ms = (v: number) => duration(Math.round(v)) || "0 s";
  return (
    <div class="charts">
      <Chart
        id="chart-duration"
        title="Build duration"
        summary={
          mid === null
            ? "No finished build yet."
            : `Median ${ms(mid)}, slowest ${ms(slowest!.duration_ms!)} (#${slowest!.build_number})${midQueue !== null ? `; median wait in the queue ${ms(midQueue)}` : ""}.`
        }
        labels={labels}
        format={ms}
        series={[
          { name: "Queued", kind: "queue", draw: "bar", values: points.map((p) => p.queue_ms) },
          { name: "Running", kind: "run", draw: "bar", values: points.map((p) => p.duration_ms) },
          { name: "Median running time", kind: "median", draw: "line", values: points.map(() => mid) },
        ]}
      />
      <Chart
        id="chart-success"
        title="Success rate"
        summary={
          finished.length ? `${ok} of ${finished.length} finished builds succeeded (${Math.round((ok / finished.length) * 100)} %).` : "No finished build yet."
        }
        labels={labels}
        max={100}
        format={(v) => `${v} %`}
        series={[{ name: "Succeeded, of the last 10 finished builds", kind: "ok", draw: "line", values: rolling }]}
      />
      <Chart
        id="chart-tests"
        title="Tests"
        summary={
          lastTests
            ? `The last build with tests: ${lastTests.text}. ${withTests.filter((p) => p.tests!.failed + p.tests!.errored > 0).length} of ${withTests.length} builds had failures.`
            : "No build sent test reports."
        }
        labels={labels}
        format={(v) => String(Math.round(v))}
        series={[
          { name: "Failed", kind: "failed", draw: "bar", values: points.map((p) => (p.tests ? p.tests.failed + p.tests.errored : null)) },
          { name: "Passed", kind: "passed", draw: "bar", values: points.map((p) => p.tests?.passed ?? null) },
          { name: "Skipped", kind: "skipped", draw: "bar", values: points.map((p) => p.tests?.skipped ?? null) },
        ]}
      />
      <Chart
        id="chart-coverage"
        title="Coverage"
        summary={
          covered.length
            ? `Line coverage ${covered.at(-1)} % in the last build with coverage${covered.length > 1 ? `, ${trend(covered[0]!, covered.at(-1)!)}` : ""}.`
            : "No build sent coverage (lcov)."
        }
        labels={labels}
        max={100}
        format={(v) => `${v} %`}
        series={[{ name: "Line coverage", kind: "coverage", draw: "line", values: coverage }]}
      />
      <Chart
        id="chart-artifacts"
        title="Artifact size"
        summary={
          names.length
            ? names
                .map(
                  (n) =>
                    `${n}: ${bytes(
                      [...points]
                        .reverse()
                        .flatMap((p) => p.artifacts)
                        .find((a) => a.path.endsWith(n))!.size,
                    )}`,
                )
                .join(", ") + " in the last build that made each."
            : "No build kept artifacts."
        }
        labels={labels}
        format={bytes}
        series={names.map((n, i) => ({
          name: n,
          kind: `artifact-${i}`,
          draw: "line" as const,
          values: points.map((p) => p.artifacts.find((a) => a.path.split("/").pop() === n)?.size ?? null),
        }))}
      />
    </div>
  );
}

function FlakyTests({ pipeline, project }: { pipeline: Pipeline; project: Project }) {
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const flaky = useLoad(
    () => get<{ tests: TestInfo[]; next_cursor: string | null }>(`/v1/pipelines/${encodeURIComponent(pipeline.id)}/flaky-tests${query({ limit: 50, cursor })}`),
    [pipeline.id, cursor],
  );
  return (
    <section aria-labelledby="h-flaky">
      <h2 id="h-flaky">Flaky tests</h2>
      <p class="muted">Tests that failed and passed on the same commit (a re-run told them apart), most recently flaky first.</p>
      <LoadState state={flaky} what="the flaky tests" />
      {flaky.data && flaky.data.tests.length === 0 && <p class="muted">None so far.</p>}
      {flaky.data && flaky.data.tests.length > 0 && (
        <Table caption="Flaky tests" columns={["Test", "Failure rate", "Flaky runs", "Last flaky"]}>
          {flaky.data.tests.map((t) => (
            <tr key={t.test_key}>
              <td>
                <span class="test-suite">{t.suite} ›</span> {t.name}
              </td>
              <td>
                {Math.round(t.failure_rate * 100)} %{" "}
                <span class="muted">
                  ({t.failures} of {t.runs} runs)
                </span>
              </td>
              <td>{t.flaky_runs}</td>
              <td title={dateTime(t.last_flaky_at)}>
                {t.last_flaky_build_id ? (
                  <a href={`/projects/${encodeURIComponent(project.id)}/builds/${encodeURIComponent(t.last_flaky_build_id)}?tab=tests`}>
                    {ago(t.last_flaky_at)}
                  </a>
                ) : (
                  ago(t.last_flaky_at)
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
      {flaky.data?.next_cursor && (
        <button type="button" class="secondary" onClick={() => setCursor(flaky.data!.next_cursor!)}>
          More flaky tests
        </button>
      )}
    </section>
  );
}

export function PipelinePage({ project_id, pipeline_id }: Record<string, string>) {
  const project = useLoad(() => get<{ project: Project }>(`/v1/projects/${encodeURIComponent(project_id!)}`), [project_id]);
  const pipeline = useLoad(() => get<{ pipeline: Pipeline }>(`/v1/pipelines/${encodeURIComponent(pipeline_id!)}`), [pipeline_id]);
  const [branch, setBranch] = useState("");
  const trends = useLoad(
    () => get<{ builds: Trend[] }>(`/v1/pipelines/${encodeURIComponent(pipeline_id!)}/trends${query({ limit: 50, branch })}`),
    [pipeline_id, branch],
  );
  const p = pipeline.data?.pipeline;
  if (!p || !project.data) return <LoadState state={p ? project : pipeline} what="the pipeline" />;
  return (
    <section>
      <PageTitle title={`${p.name}: trends`} />
      <p class="crumbs">
        <a href={`/projects/${encodeURIComponent(project_id!)}?tab=pipelines`}>{project.data.project.name}</a> › {p.name}
      </p>
      <form class="filters" aria-label="Which builds" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="trend-branch">Branch (empty: all)</label>
          <input id="trend-branch" type="search" value={branch} onChange={(e) => setBranch(e.currentTarget.value.trim())} />
        </div>
      </form>
      <LoadState state={trends} what="the builds" />
      {trends.data &&
        (trends.data.builds.length ? (
          <>
            <p class="muted">{`The last ${trends.data.builds.length} builds, oldest on the left.`}</p>
            <Charts builds={trends.data.builds} />
          </>
        ) : (
          <p class="muted">No builds yet.</p>
        ))}
      <FlakyTests pipeline={p} project={project.data.project} />
    </section>
  );
}

/** How the last coverage compares with the first shown: equal figures are "the same", not "up". */
function trend(first: number, last: number): string {
  if (last === first) return "the same as the first build shown";
  return `${last > first ? "up" : "down"} from ${first} %`;
}
