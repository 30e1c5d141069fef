// A build's Tests tab (docs/test-results.md): the summary, reports Roost could not read in full,
// the cases failures first (message, stack trace with its files linked to the source host, what
// the test printed, its last results as a strip of dots), a status filter and a search, analyzer
// issues, and coverage with the files that lost the most.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { get, query } from "../api.ts";
import { LoadState, Notice, StatusBadge, Table, useLoad, type Loaded } from "../components.tsx";
import { duration } from "../format.ts";
import type { AnalyzerIssue, Build, BuildTests, Coverage, TestCase, TestSummary } from "../types.ts";

const FAILED = new Set(["failed", "error"]);

/** "6 passed · 4 failed · 2 skipped · 1 flaky", each count with its word and symbol. */
export function SummaryCounts({ summary }: { summary: TestSummary }) {
  const failures = summary.failed + summary.errored;
  return (
    <p class="test-counts">
      {failures > 0 && <StatusBadge status="failed" label={`${failures} failed`} />} <StatusBadge status="passed" label={`${summary.passed} passed`} />{" "}
      {summary.skipped > 0 && <StatusBadge status="skipped" label={`${summary.skipped} skipped`} />}{" "}
      {summary.flaky > 0 && <StatusBadge status="flaky" label={`${summary.flaky} flaky`} />}{" "}
      <span class="muted">
        {summary.total} tests, {duration(summary.duration_ms) || "0 ms"} in all
        {summary.coverage_percent !== null ? ` · line coverage ${summary.coverage_percent} %` : ""}
        {summary.annotations ? ` · ${summary.annotations} analyzer issue${summary.annotations === 1 ? "" : "s"}` : ""}
      </span>
    </p>
  );
}

/** A link to a file (and line) on the source host, or the plain text when there is no web view. */
function SourceLink({ source, path, line, children }: { source: string | null; path: string; line: number | null; children: ComponentChildren }) {
  if (!source) return <>{children}</>;
  const href = source.replace("{path}", path.split("/").map(encodeURIComponent).join("/")).replace(line ? "{line}" : /#.*$/, line ? String(line) : "");
  return (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  );
}

/** A stack trace with each "path/file.dart 12:5" or "(path/file.dart:12:5)" frame in the checkout linked. */
const FRAME = /((?:[\w.@+-]+\/)+[\w.@+-]+\.(?:dart|kt|java|swift|mm?|ts|js|py))(?:(?: |:)(\d+)(?::\d+)?)?/g;
function StackTrace({ text, source }: { text: string; source: string | null }) {
  const parts: ComponentChildren[] = [];
  let last = 0;
  for (const m of text.matchAll(FRAME)) {
    if (m[1]!.startsWith("/") || text.slice(Math.max(0, m.index! - 8), m.index!).endsWith("package:")) continue;
    parts.push(text.slice(last, m.index));
    parts.push(
      <SourceLink source={source} path={m[1]!} line={m[2] ? Number(m[2]) : null}>
        {m[0]}
      </SourceLink>,
    );
    last = m.index! + m[0].length;
  }
  parts.push(text.slice(last));
  // Focusable: a long trace scrolls, and a keyboard must reach it too.
  return (
    <pre class="test-stack" tabIndex={0}>
      {parts}
    </pre>
  );
}

/** The test's last results in this lane, newest first: a word and a symbol each, never colour alone. */
function ResultStrip({ build, c }: { build: Build; c: TestCase }) {
  const symbol: Record<string, string> = { passed: "✓", failed: "✕", error: "!", skipped: "–" };
  return (
    <ol class="result-strip" aria-label={`Last ${c.last_results.length} results of this test on ${build.branch}, newest first`}>
      {c.last_results.map((d) => (
        <li key={`${d.build_id}-${d.build_number}`}>
          <a
            class={`dot dot-${d.status}${d.build_id === build.id ? " dot-this" : ""}`}
            href={`/projects/${encodeURIComponent(build.project_id)}/builds/${encodeURIComponent(d.build_id)}?tab=tests`}
            title={`Build #${d.build_number}: ${d.status}`}
          >
            <span aria-hidden="true">{symbol[d.status]}</span>
            <span class="sr-only">{`#${d.build_number} ${d.status}`}</span>
          </a>
        </li>
      ))}
    </ol>
  );
}

function CaseItem({ build, c, source, open }: { build: Build; c: TestCase; source: string | null; open: boolean }) {
  const failed = FAILED.has(c.status);
  return (
    <li class={`test-case test-${c.status}`} id={`test-${c.id}`}>
      <details open={open}>
        <summary>
          <StatusBadge status={c.status} /> <span class="test-suite">{c.suite} ›</span> <strong>{c.name}</strong>{" "}
          {c.duration_ms !== null && <span class="muted">{duration(c.duration_ms)}</span>} {c.flaky && <StatusBadge status="flaky" />}{" "}
          {failed &&
            (c.new_failure ? (
              <span class="badge badge-new">new failure</span>
            ) : (
              c.failing_since && <span class="muted">failing since #{c.failing_since.build_number}</span>
            ))}
        </summary>
        <div class="test-body">
          <ResultStrip build={build} c={c} />
          {c.file && (
            <p class="muted">
              Defined in{" "}
              <SourceLink source={source} path={c.file} line={c.line}>
                {c.file}
                {c.line ? `:${c.line}` : ""}
              </SourceLink>
            </p>
          )}
          {c.message && (
            <pre class="test-message" tabIndex={0}>
              {c.message}
            </pre>
          )}
          {c.stack && <StackTrace text={c.stack} source={source} />}
          {c.output && (
            <details class="test-output">
              <summary>What it printed</summary>
              <StackTrace text={c.output} source={source} />
            </details>
          )}
        </div>
      </details>
    </li>
  );
}

function Cases({ build, source }: { build: Build; source: string | null }) {
  const [status, setStatus] = useState("");
  const [search, setSearch] = useState("");
  const [q, setQ] = useState("");
  const [cases, setCases] = useState<TestCase[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [state, setState] = useState<"loading" | "ready" | Error>("loading");
  // The search is sent once typing pauses.
  useEffect(() => {
    const timer = setTimeout(() => setQ(search.trim()), 300);
    return () => clearTimeout(timer);
  }, [search]);
  const load = async (cursor: string | null) => {
    try {
      const page = await get<{ cases: TestCase[]; next_cursor: string | null }>(
        `/v1/builds/${encodeURIComponent(build.id)}/tests/cases${query({ status, q, limit: 50, cursor })}`,
      );
      setCases((before) => (cursor ? [...before, ...page.cases] : page.cases));
      setNext(page.next_cursor);
      setState("ready");
    } catch (err) {
      setState(err as Error);
    }
  };
  useEffect(() => {
    setState("loading");
    void load(null);
  }, [build.id, status, q]);
  return (
    <section aria-labelledby="h-cases">
      <h3 id="h-cases">Test cases</h3>
      <form class="filters" aria-label="Filter test cases" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="filter-test-status">Result</label>
          <select id="filter-test-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">All, failures first</option>
            <option value="failed,error">Failed</option>
            <option value="skipped">Skipped</option>
            <option value="passed">Passed</option>
          </select>
        </div>
        <div class="field">
          <label for="filter-test-name">Test name or file</label>
          <input id="filter-test-name" type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </div>
      </form>
      {state instanceof Error && <Notice kind="error">{`Could not load the test cases: ${state.message}`}</Notice>}
      {state === "loading" && cases.length === 0 && (
        <p class="muted" role="status">
          Loading the test cases…
        </p>
      )}
      {state === "ready" && cases.length === 0 && <p class="muted">No test case matches.</p>}
      <ul class="test-cases">
        {cases.map((c, i) => (
          <CaseItem key={c.id} build={build} c={c} source={source} open={FAILED.has(c.status) && i < 10} />
        ))}
      </ul>
      {next && (
        <button type="button" class="secondary" onClick={() => void load(next)}>
          More test cases
        </button>
      )}
    </section>
  );
}

function AnalyzerIssues({ issues, source }: { issues: AnalyzerIssue[]; source: string | null }) {
  if (issues.length === 0) return null;
  return (
    <section aria-labelledby="h-analyzer">
      <h3 id="h-analyzer">Analyzer issues</h3>
      <Table caption="Analyzer issues, errors first" columns={["Severity", "Where", "Issue"]}>
        {issues.map((a, i) => (
          <tr key={i}>
            <td>
              <StatusBadge status={a.severity} />
            </td>
            <td class="branch">
              <SourceLink source={source} path={a.file} line={a.line}>{`${a.file}:${a.line}`}</SourceLink>
            </td>
            <td>
              {a.message} <code class="muted">{a.code}</code>
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

function CoverageSection({ build, source }: { build: Build; source: string | null }) {
  const coverage = useLoad(() => get<Coverage>(`/v1/builds/${encodeURIComponent(build.id)}/coverage${query({ limit: 10 })}`), [build.id]);
  const c = coverage.data;
  if (!c?.coverage) return <LoadState state={coverage} what="coverage" />;
  const sign = (n: number) => (n > 0 ? `+${n}` : String(n));
  return (
    <section aria-labelledby="h-coverage">
      <h3 id="h-coverage">Coverage</h3>
      <p>
        <strong>{c.coverage.percent} %</strong> of {c.coverage.lines_found} lines{" "}
        {c.baseline ? (
          <>
            {sign(c.change!)} points against{" "}
            <a href={`/projects/${encodeURIComponent(build.project_id)}/builds/${encodeURIComponent(c.baseline.build_id)}?tab=tests`}>
              build #{c.baseline.build_number}
            </a>{" "}
            on {c.baseline.lane} ({c.baseline.percent} %)
          </>
        ) : (
          <span class="muted">(no earlier build of the target branch has coverage to compare with)</span>
        )}
      </p>
      <Table
        caption={
          c.baseline
            ? `The ${c.files.length} files that lost the most coverage, of ${c.total_files}`
            : `${c.files.length} files of ${c.total_files}, the least covered first`
        }
        captionShown
        columns={["File", "Lines hit", "Coverage", "Change"]}
      >
        {c.files.map((f) => (
          <tr key={f.path}>
            <td class="branch">
              <SourceLink source={source} path={f.path} line={null}>
                {f.path}
              </SourceLink>
            </td>
            <td>
              {f.lines_hit} of {f.lines_found}
            </td>
            <td>{f.percent} %</td>
            <td>{f.change === null ? (f.baseline_percent === null && c.baseline ? "new file" : "") : `${sign(f.change)} points`}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

export function TestsTab({ build, tests }: { build: Build; tests: Loaded<BuildTests> }) {
  const t = tests.data;
  if (!t) return <LoadState state={tests} what="the test results" />;
  const troubled = t.reports.filter((r) => r.status !== "read");
  return (
    <section aria-labelledby="h-tests" class="tests-tab">
      <h2 id="h-tests">Tests</h2>
      {t.summary ? (
        <SummaryCounts summary={t.summary} />
      ) : (
        <p class="muted">
          {["queued", "running"].includes(build.status) ? "Test results appear when the build's steps are over." : "This build sent no test report."} Reports
          are read from the files the pipeline's <code>test_reports</code> patterns match (docs/test-results.md).
        </p>
      )}
      {troubled.map((r) => (
        <Notice kind="warning" key={r.id}>
          <p>
            <strong>{r.path}</strong> {r.status === "rejected" ? "was not read" : "was read in part"}: {r.problems.join(" ")}
          </p>
        </Notice>
      ))}
      {t.summary && t.summary.total > 0 && <Cases build={build} source={t.source_file_url} />}
      <AnalyzerIssues issues={t.annotations} source={t.source_file_url} />
      {t.summary?.coverage_percent !== null && t.summary?.coverage_percent !== undefined && <CoverageSection build={build} source={t.source_file_url} />}
    </section>
  );
}
