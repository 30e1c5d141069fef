// Small SVG charts drawn by the app itself (no chart library: the whole app stays within its
// JavaScript budget, docs/web-app.md). Each chart is a figure with a caption that says what it
// shows in words, a legend whose entries have a shape as well as a colour, and its numbers as a
// table for screen readers and anyone who would rather read them. Colours are the theme's
// variables, so dark mode and the light theme both apply.
import type { ComponentChildren } from "preact";

export interface Series {
  name: string;
  /** Picks the colour and line style (app.css .chart-<kind>). */
  kind: string;
  values: (number | null)[];
  draw: "bar" | "line";
}

const W = 640;
const H = 170;
const TOP = 14;
const BOTTOM = 18;

export function Chart(props: {
  id: string;
  title: string;
  summary: ComponentChildren;
  labels: string[];
  series: Series[];
  format: (v: number) => string;
  max?: number;
}) {
  const { id, labels, series, format } = props;
  const n = Math.max(labels.length, 1);
  const bars = series.filter((s) => s.draw === "bar");
  const stackTop = labels.map((_, i) => bars.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const lineMax = Math.max(0, ...series.filter((s) => s.draw === "line").flatMap((s) => s.values.filter((v): v is number => v !== null)));
  const max = props.max ?? (Math.max(lineMax, ...stackTop) || 1);
  const y = (v: number) => TOP + (H - TOP - BOTTOM) * (1 - v / max);
  const step = W / n;
  return (
    <figure class="chart" aria-labelledby={`${id}-title`}>
      <figcaption>
        <strong id={`${id}-title`}>{props.title}</strong>
        <span id={`${id}-summary`} class="muted">
          {" "}
          {props.summary}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-title ${id}-summary`} preserveAspectRatio="none">
        <line class="chart-axis" x1="0" x2={W} y1={y(0)} y2={y(0)} />
        <line class="chart-grid" x1="0" x2={W} y1={y(max)} y2={y(max)} />
        <text class="chart-label" x="2" y={TOP - 3}>
          {format(max)}
        </text>
        {labels.length > 0 && (
          <>
            <text class="chart-label" x="2" y={H - 4}>
              {labels[0]}
            </text>
            <text class="chart-label" x={W - 2} y={H - 4} text-anchor="end">
              {labels[labels.length - 1]}
            </text>
          </>
        )}
        {labels.map((label, i) => {
          let base = 0;
          return bars.map((s) => {
            const v = s.values[i];
            if (v === null || v === undefined || v <= 0) return null;
            const rect = (
              <rect class={`chart-${s.kind}`} x={i * step + step * 0.12} width={Math.max(1, step * 0.76)} y={y(base + v)} height={y(base) - y(base + v)}>
                <title>{`${label}: ${s.name} ${format(v)}`}</title>
              </rect>
            );
            base += v;
            return rect;
          });
        })}
        {series
          .filter((s) => s.draw === "line")
          .map((s) => (
            <polyline
              class={`chart-line chart-${s.kind}`}
              fill="none"
              points={s.values
                .map((v, i) => (v === null ? null : `${(i + 0.5) * step},${y(v)}`))
                .filter(Boolean)
                .join(" ")}
            />
          ))}
      </svg>
      <ul class="chart-legend">
        {series.map((s) => (
          <li key={s.name}>
            <span class={`swatch chart-${s.kind} swatch-${s.draw}`} aria-hidden="true" /> {s.name}
          </li>
        ))}
      </ul>
      <details class="chart-numbers">
        <summary>The numbers</summary>
        <div class="table-wrap">
          <table>
            <caption class="sr-only">{props.title}</caption>
            <thead>
              <tr>
                <th scope="col">Build</th>
                {series.map((s) => (
                  <th scope="col" key={s.name}>
                    {s.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {labels.map((label, i) => (
                <tr key={label}>
                  <th scope="row">{label}</th>
                  {series.map((s) => (
                    <td key={s.name}>{s.values[i] === null || s.values[i] === undefined ? "–" : format(s.values[i]!)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
