// The HTML of the chart view: the SVG chart, a legend, and the Pareto configurations as a table.
// No scripts run in the page; the content security policy says so.
import {
  escapeXml,
  formatBlock,
  formatChoice,
  formatJoules,
  formatSeconds,
  renderChartSvg,
  sameChoice,
  type ChartChoice,
  type KernelChart,
} from './chart';

function saving(reference: ChartChoice, choice: ChartChoice): string {
  const fraction = 1 - choice.energy_j / reference.energy_j;
  return `${(fraction * 100).toFixed(1)} %`;
}

/** One sentence comparing the recommendation with the current launch and NVIDIA's choice. */
export function chartSummary(chart: KernelChart): string {
  const rec = chart.recommendation;
  const parts = [
    `Recommended block ${formatChoice(rec)}: ${formatSeconds(rec.time_s)}, ${formatJoules(rec.energy_j)} per launch`,
  ];
  if (chart.current !== null && sameChoice(chart.current, rec)) {
    parts.push('which is the current launch');
  } else if (chart.current !== null) {
    parts.push(`saves ${saving(chart.current, rec)} energy against the current ${formatChoice(chart.current)}`);
  }
  if (chart.heuristic !== null) {
    parts.push(`${saving(chart.heuristic, rec)} against NVIDIA's occupancy heuristic ${formatChoice(chart.heuristic)}`);
  }
  return `${parts.join(', ')}.`;
}

/** The Pareto points as table rows; the shapes of one tie group share one row and its summary. */
export function frontRows(chart: KernelChart): string[] {
  const front = chart.points
    .filter((point) => point.pareto)
    .sort((a, b) => a.time_s - b.time_s);
  const seen = new Set<number>();
  const rows: string[] = [];
  for (const point of front) {
    if (point.tie_group !== undefined && seen.has(point.tie_group)) {
      continue;
    }
    rows.push(
      `<tr><td>${escapeXml(formatBlock(point.block))}</td>` +
        `<td>${point.power_limit_w ? `${Math.round(point.power_limit_w)} W` : 'default'}</td>` +
        `<td>${escapeXml(formatSeconds(point.time_s))}</td>` +
        `<td>${escapeXml(formatJoules(point.energy_j))}</td>` +
        `<td>${point.power_w.toFixed(0)} W</td></tr>`,
    );
    const tie = point.tie_group !== undefined ? chart.tieGroups[point.tie_group] : undefined;
    if (point.tie_group !== undefined && tie) {
      seen.add(point.tie_group);
      rows.push(`<tr class="tie"><td colspan="5">${escapeXml(tie)}</td></tr>`);
    }
  }
  return rows;
}

export function chartHtml(chart: KernelChart, cspSource: string): string {
  const rows = frontRows(chart).join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline'; img-src ${cspSource} data:;">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>FlipFlop: ${escapeXml(chart.kernel)}</title>
<style>
  body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px 16px; }
  h1 { font-size: 1.2em; margin: 12px 0 4px; word-break: break-all; }
  .gpu, .summary { color: var(--vscode-descriptionForeground); margin: 4px 0; }
  .legend { display: flex; flex-wrap: wrap; gap: 16px; margin: 8px 0; font-size: 0.9em; }
  .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; border-radius: 50%; }
  .swatch.point { background: var(--vscode-descriptionForeground, #888); }
  .swatch.pareto { background: var(--vscode-charts-blue, #1a85ff); }
  .swatch.current { border: 2px solid var(--vscode-charts-orange, #d18616); background: none; }
  .swatch.heuristic { border: 2px solid var(--vscode-charts-red, #e51400); transform: rotate(45deg); border-radius: 0; }
  .swatch.recommended { border: 2px solid var(--vscode-charts-green, #388a34); border-radius: 0; }
  table { border-collapse: collapse; margin-top: 12px; }
  th, td { padding: 2px 12px 2px 0; text-align: right; font-variant-numeric: tabular-nums; }
  th { border-bottom: 1px solid var(--vscode-editorWidget-border, #ccc); }
  tr.tie td { text-align: left; font-style: italic; color: var(--vscode-descriptionForeground); }
  svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1 id="kernel">${escapeXml(chart.kernel)}</h1>
<p class="gpu">Predicted for ${escapeXml(chart.gpu.name)} (${escapeXml(chart.gpu.id)}); each point is one block shape.</p>
<p class="summary">${escapeXml(chartSummary(chart))}</p>
<div class="legend">
  <span><span class="swatch point"></span>block shape</span>
  <span><span class="swatch pareto"></span>Pareto front (no shape is both faster and cheaper)</span>
  <span><span class="swatch current"></span>current launch</span>
  <span><span class="swatch heuristic"></span>NVIDIA occupancy heuristic</span>
  <span><span class="swatch recommended"></span>recommended</span>
</div>
${renderChartSvg(chart)}
<table>
<thead><tr><th>block</th><th>power limit</th><th>time</th><th>energy</th><th>power</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</body>
</html>`;
}
