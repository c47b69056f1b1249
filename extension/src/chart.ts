// The energy/time Pareto chart: the server's `flipflop/kernelChart` answer in, SVG text out.
// Pure so the geometry can be tested without VS Code.

export type Block = [number, number, number];

export interface ChartPoint {
  block: Block;
  power_limit_w: number | null;
  time_s: number;
  power_w: number;
  energy_j: number;
  pareto: boolean;
  /** Index into `KernelChart.tieGroups` when the point ties with other shapes. */
  tie_group?: number;
}

export interface ChartChoice {
  block: Block;
  time_s: number;
  energy_j: number;
  power_limit_w?: number | null;
}

export interface KernelChart {
  kernel: string;
  gpu: { id: string; name: string };
  points: ChartPoint[];
  current: ChartChoice | null;
  /** NVIDIA's occupancy-heuristic choice; null when the server could not place it. */
  heuristic: ChartChoice | null;
  recommendation: ChartChoice;
  /** The server's one-line description of each tie group, e.g. "38 shapes tie within 1% at …". */
  tieGroups: string[];
}

// ---------------------------------------------------------------------------------------------
// Reading the server's answer

type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

function isPositiveNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

function parseBlock(value: unknown): Block | undefined {
  if (!Array.isArray(value) || value.length < 1 || value.length > 3) {
    return undefined;
  }
  if (!value.every((n) => Number.isInteger(n) && n >= 1)) {
    return undefined;
  }
  const [x, y = 1, z = 1] = value as number[];
  return [x, y, z];
}

function parseChoice(value: unknown): ChartChoice | undefined {
  if (typeof value !== 'object' || value === null) {
    return undefined;
  }
  const record = value as Record<string, unknown>;
  const block = parseBlock(record.block);
  if (block === undefined || !isPositiveNumber(record.time_s) || !isPositiveNumber(record.energy_j)) {
    return undefined;
  }
  const limit = record.power_limit_w;
  return {
    block,
    time_s: record.time_s,
    energy_j: record.energy_j,
    power_limit_w: isPositiveNumber(limit) ? limit : null,
  };
}

function parsePoint(value: unknown): ChartPoint | undefined {
  const choice = parseChoice(value);
  if (choice === undefined) {
    return undefined;
  }
  const record = value as Record<string, unknown>;
  const power = record.power_w;
  const point: ChartPoint = {
    block: choice.block,
    power_limit_w: choice.power_limit_w ?? null,
    time_s: choice.time_s,
    energy_j: choice.energy_j,
    power_w: typeof power === 'number' && Number.isFinite(power) ? power : choice.energy_j / choice.time_s,
    pareto: record.pareto === true,
  };
  if (Number.isInteger(record.tie_group) && (record.tie_group as number) >= 0) {
    point.tie_group = record.tie_group as number;
  }
  return point;
}

function parseTieGroups(value: unknown): string[] {
  return Array.isArray(value) ? value.map((text) => (typeof text === 'string' ? text : '')) : [];
}

/** Validates the answer of `flipflop/kernelChart` (null means: no kernel at that position). */
export function parseKernelChart(value: unknown): Parsed<KernelChart | null> {
  if (value === null || value === undefined) {
    return { ok: true, value: null };
  }
  if (typeof value !== 'object') {
    return { ok: false, error: 'the chart data is not an object' };
  }
  const record = value as Record<string, unknown>;
  if (typeof record.kernel !== 'string') {
    return { ok: false, error: 'the chart data has no kernel name' };
  }
  const gpu = record.gpu as Record<string, unknown> | undefined;
  if (typeof gpu !== 'object' || gpu === null || typeof gpu.id !== 'string') {
    return { ok: false, error: 'the chart data has no GPU' };
  }
  if (!Array.isArray(record.points)) {
    return { ok: false, error: 'the chart data has no points' };
  }
  const points = record.points.map(parsePoint);
  if (points.some((point) => point === undefined)) {
    return { ok: false, error: 'a chart point lacks a block shape, a positive time or energy' };
  }
  if (points.length === 0) {
    return { ok: false, error: 'the chart has no configurations' };
  }
  const recommendation = parseChoice(record.recommendation);
  if (recommendation === undefined) {
    return { ok: false, error: 'the chart data lacks the recommendation' };
  }
  return {
    ok: true,
    value: {
      kernel: record.kernel,
      gpu: { id: gpu.id, name: typeof gpu.name === 'string' ? gpu.name : gpu.id },
      points: points as ChartPoint[],
      current: parseChoice(record.current) ?? null,
      heuristic: parseChoice(record.heuristic) ?? null,
      recommendation,
      tieGroups: parseTieGroups(record.tie_groups),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Formatting

function withUnit(value: number, units: readonly [number, string][]): string {
  const [scale, unit] = units.find(([factor]) => Math.abs(value) >= factor) ?? units[units.length - 1];
  const scaled = value / scale;
  const digits = Math.abs(scaled) >= 100 ? 0 : Math.abs(scaled) >= 10 ? 1 : 2;
  return `${scaled.toFixed(digits)} ${unit}`;
}

export function formatSeconds(seconds: number): string {
  return withUnit(seconds, [[1, 's'], [1e-3, 'ms'], [1e-6, 'µs'], [1e-9, 'ns']]);
}

export function formatJoules(joules: number): string {
  return withUnit(joules, [[1e3, 'kJ'], [1, 'J'], [1e-3, 'mJ'], [1e-6, 'µJ'], [1e-9, 'nJ']]);
}

/** 256 for 1-D blocks, 16×16 for 2-D, 8×8×4 for 3-D. */
export function formatBlock(block: Block): string {
  const [x, y, z] = block;
  if (z > 1) {
    return `${x}×${y}×${z}`;
  }
  return y > 1 ? `${x}×${y}` : `${x}`;
}

export function formatChoice(choice: ChartChoice): string {
  const limit = choice.power_limit_w ? ` @ ${Math.round(choice.power_limit_w)} W` : '';
  return `${formatBlock(choice.block)}${limit}`;
}

// ---------------------------------------------------------------------------------------------
// Geometry

export interface Axis {
  min: number;
  max: number;
  log: boolean;
  /** Pixel positions of min and max. */
  from: number;
  to: number;
}

export interface Tick {
  value: number;
  position: number;
  label: string;
}

export interface PlacedPoint {
  x: number;
  y: number;
  point: ChartPoint;
}

export interface PlacedChoice {
  x: number;
  y: number;
  choice: ChartChoice;
  label: string;
}

export interface ChartLayout {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  xAxis: Axis;
  yAxis: Axis;
  xTicks: Tick[];
  yTicks: Tick[];
  points: PlacedPoint[];
  /** The Pareto points ordered by time, the line the chart draws through them. */
  front: PlacedPoint[];
  current: PlacedChoice | null;
  heuristic: PlacedChoice | null;
  recommendation: PlacedChoice;
}

// Beyond this max/min ratio a linear axis squeezes the interesting end into a few pixels.
const LOG_SCALE_RATIO = 8;
const MARGIN = { left: 78, right: 24, top: 20, bottom: 52 };

export function axisPosition(axis: Axis, value: number): number {
  const fraction = axis.log
    ? (Math.log(value) - Math.log(axis.min)) / (Math.log(axis.max) - Math.log(axis.min))
    : (value - axis.min) / (axis.max - axis.min);
  return axis.from + fraction * (axis.to - axis.from);
}

function makeAxis(values: readonly number[], from: number, to: number): Axis {
  let low = Math.min(...values);
  let high = Math.max(...values);
  const log = low > 0 && high / low > LOG_SCALE_RATIO;
  if (log) {
    // Five per cent of the span on each side keeps markers off the frame.
    const pad = (Math.log(high) - Math.log(low)) * 0.05;
    return { min: Math.exp(Math.log(low) - pad), max: Math.exp(Math.log(high) + pad), log, from, to };
  }
  if (high === low) {
    const spread = high === 0 ? 1 : Math.abs(high) * 0.1;
    low -= spread;
    high += spread;
  }
  const pad = (high - low) * 0.05;
  return { min: Math.max(0, low - pad), max: high + pad, log, from, to };
}

function niceStep(span: number, count: number): number {
  const raw = span / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const multiple = [1, 2, 5, 10].find((m) => m * magnitude >= raw) ?? 10;
  return multiple * magnitude;
}

export function axisTicks(axis: Axis, format: (value: number) => string): Tick[] {
  let values: number[] = [];
  if (axis.log) {
    for (let exponent = Math.floor(Math.log10(axis.min)); exponent <= Math.ceil(Math.log10(axis.max)); exponent++) {
      for (const mantissa of [1, 2, 5]) {
        // Powers of ten with negative exponents are inexact in binary; round to the decimal.
        const value = Number((mantissa * 10 ** exponent).toPrecision(12));
        if (value >= axis.min * (1 - 1e-9) && value <= axis.max * (1 + 1e-9)) {
          values.push(value);
        }
      }
    }
  }
  if (values.length < 3) {
    const step = niceStep(axis.max - axis.min, 5);
    values = [];
    for (let value = Math.ceil(axis.min / step) * step; value <= axis.max; value += step) {
      values.push(Number(value.toPrecision(12)));
    }
  }
  return values.map((value) => ({ value, position: axisPosition(axis, value), label: format(value) }));
}

export function layoutChart(chart: KernelChart, width = 720, height = 440): ChartLayout {
  const plot = {
    left: MARGIN.left,
    top: MARGIN.top,
    right: width - MARGIN.right,
    bottom: height - MARGIN.bottom,
  };
  const choices = [chart.recommendation, chart.heuristic, chart.current]
    .filter((choice): choice is ChartChoice => choice !== null);
  const times = [...chart.points.map((p) => p.time_s), ...choices.map((c) => c.time_s)];
  const energies = [...chart.points.map((p) => p.energy_j), ...choices.map((c) => c.energy_j)];
  const xAxis = makeAxis(times, plot.left, plot.right);
  // SVG y grows downwards: low energy at the bottom.
  const yAxis = makeAxis(energies, plot.bottom, plot.top);
  const place = (point: ChartPoint): PlacedPoint => ({
    x: axisPosition(xAxis, point.time_s),
    y: axisPosition(yAxis, point.energy_j),
    point,
  });
  const placeChoice = (choice: ChartChoice, label: string): PlacedChoice => ({
    x: axisPosition(xAxis, choice.time_s),
    y: axisPosition(yAxis, choice.energy_j),
    choice,
    label,
  });
  const points = chart.points.map(place);
  const front = points
    .filter((placed) => placed.point.pareto)
    .sort((a, b) => a.point.time_s - b.point.time_s);
  return {
    width,
    height,
    plot,
    xAxis,
    yAxis,
    xTicks: axisTicks(xAxis, formatSeconds),
    yTicks: axisTicks(yAxis, formatJoules),
    points,
    front,
    current: chart.current ? placeChoice(chart.current, `current ${formatChoice(chart.current)}`) : null,
    heuristic: chart.heuristic
      ? placeChoice(chart.heuristic, `NVIDIA heuristic ${formatChoice(chart.heuristic)}`)
      : null,
    recommendation: placeChoice(
      chart.recommendation,
      `recommended ${formatChoice(chart.recommendation)}`,
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// Drawing

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const r1 = (n: number): string => n.toFixed(1);

/** The tooltip of one point; a tied point also names its group (shapes drawn on top of each other). */
export function pointTitle(point: ChartPoint, tieGroups: readonly string[] = []): string {
  const limit = point.power_limit_w ? `, power limit ${Math.round(point.power_limit_w)} W` : '';
  const tie = point.tie_group !== undefined ? tieGroups[point.tie_group] : undefined;
  return (
    `block ${formatBlock(point.block)}${limit}: ${formatSeconds(point.time_s)}, ` +
    `${formatJoules(point.energy_j)}, ${point.power_w.toFixed(0)} W` +
    (point.pareto ? ' (Pareto)' : '') +
    (tie ? `\n${tie}` : '')
  );
}

function choiceTitle(placed: PlacedChoice): string {
  return `${placed.label}: ${formatSeconds(placed.choice.time_s)}, ${formatJoules(placed.choice.energy_j)}`;
}

export function sameChoice(a: ChartChoice, b: ChartChoice): boolean {
  return a.block.every((extent, axis) => extent === b.block[axis])
    && (a.power_limit_w ?? null) === (b.power_limit_w ?? null);
}

/** Keeps a label inside the plot: flips it to the left of its marker near the right edge. */
function labelAt(layout: ChartLayout, x: number, y: number, dy: number, text: string, cls: string): string {
  const flip = x > layout.plot.right - 140;
  const anchor = flip ? 'end' : 'start';
  const dx = flip ? -10 : 10;
  return `<text class="${cls}" x="${r1(x + dx)}" y="${r1(y + dy)}" text-anchor="${anchor}">${escapeXml(text)}</text>`;
}

const STYLE = `
  text { font: 12px var(--vscode-font-family, sans-serif); fill: var(--vscode-foreground, #333); }
  .axis { stroke: var(--vscode-foreground, #333); stroke-width: 1; }
  .grid { stroke: var(--vscode-editorWidget-border, #ccc); stroke-width: 0.5; stroke-dasharray: 2 3; }
  .title { font-size: 13px; font-weight: 600; }
  .point { fill: var(--vscode-descriptionForeground, #888); opacity: 0.55; }
  .pareto { fill: var(--vscode-charts-blue, #1a85ff); stroke: var(--vscode-editor-background, #fff); stroke-width: 1; }
  .front { fill: none; stroke: var(--vscode-charts-blue, #1a85ff); stroke-width: 1.5; }
  .current { fill: none; stroke: var(--vscode-charts-orange, #d18616); stroke-width: 2.5; }
  .heuristic { fill: none; stroke: var(--vscode-charts-red, #e51400); stroke-width: 2.5; }
  .recommended { fill: none; stroke: var(--vscode-charts-green, #388a34); stroke-width: 2.5; }
  .label-current { fill: var(--vscode-charts-orange, #d18616); font-weight: 600; }
  .label-heuristic { fill: var(--vscode-charts-red, #e51400); font-weight: 600; }
  .label-recommended { fill: var(--vscode-charts-green, #388a34); font-weight: 600; }
  .block-label { font-size: 11px; fill: var(--vscode-charts-blue, #1a85ff); }
`;

function diamond(x: number, y: number, size: number): string {
  return `M${r1(x)},${r1(y - size)} L${r1(x + size)},${r1(y)} L${r1(x)},${r1(y + size)} L${r1(x - size)},${r1(y)} Z`;
}

/** The whole chart as one SVG element; colours follow the VS Code theme through CSS variables. */
export function renderChartSvg(chart: KernelChart, width = 720, height = 440): string {
  const layout = layoutChart(chart, width, height);
  const { plot } = layout;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="flipflop-chart" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(
        `Energy versus time per block shape for ${chart.kernel} on ${chart.gpu.name}`,
      )}">`,
    `<style>${STYLE}</style>`,
  );
  for (const tick of layout.xTicks) {
    parts.push(
      `<line class="grid" x1="${r1(tick.position)}" y1="${plot.top}" x2="${r1(tick.position)}" y2="${plot.bottom}"/>`,
      `<text x="${r1(tick.position)}" y="${plot.bottom + 16}" text-anchor="middle">${escapeXml(tick.label)}</text>`,
    );
  }
  for (const tick of layout.yTicks) {
    parts.push(
      `<line class="grid" x1="${plot.left}" y1="${r1(tick.position)}" x2="${plot.right}" y2="${r1(tick.position)}"/>`,
      `<text x="${plot.left - 6}" y="${r1(tick.position + 4)}" text-anchor="end">${escapeXml(tick.label)}</text>`,
    );
  }
  parts.push(
    `<line class="axis" x1="${plot.left}" y1="${plot.bottom}" x2="${plot.right}" y2="${plot.bottom}"/>`,
    `<line class="axis" x1="${plot.left}" y1="${plot.top}" x2="${plot.left}" y2="${plot.bottom}"/>`,
    `<text class="title" x="${r1((plot.left + plot.right) / 2)}" y="${height - 12}" text-anchor="middle">` +
      `time per launch${layout.xAxis.log ? ' (log scale)' : ''}</text>`,
    `<text class="title" transform="translate(16 ${r1((plot.top + plot.bottom) / 2)}) rotate(-90)" ` +
      `text-anchor="middle">energy per launch${layout.yAxis.log ? ' (log scale)' : ''}</text>`,
  );
  for (const placed of layout.points.filter((p) => !p.point.pareto)) {
    parts.push(
      `<circle class="point" cx="${r1(placed.x)}" cy="${r1(placed.y)}" r="3">` +
        `<title>${escapeXml(pointTitle(placed.point, chart.tieGroups))}</title></circle>`,
    );
  }
  if (layout.front.length > 1) {
    const path = layout.front.map((p, i) => `${i === 0 ? 'M' : 'L'}${r1(p.x)},${r1(p.y)}`).join(' ');
    parts.push(`<path class="front" d="${path}"/>`);
  }
  const labelFront = layout.front.length <= 12;
  for (const placed of layout.front) {
    parts.push(
      `<circle class="pareto" cx="${r1(placed.x)}" cy="${r1(placed.y)}" r="5">` +
        `<title>${escapeXml(pointTitle(placed.point, chart.tieGroups))}</title></circle>`,
    );
    if (labelFront) {
      parts.push(
        `<text class="block-label" x="${r1(placed.x + 6)}" y="${r1(placed.y - 7)}">` +
          `${escapeXml(formatBlock(placed.point.block))}</text>`,
      );
    }
  }
  // Markers stack their labels at different heights so coinciding choices stay readable.
  const { heuristic, recommendation, current } = layout;
  const currentIsHeuristic =
    current !== null && heuristic !== null && sameChoice(current.choice, heuristic.choice);
  if (heuristic !== null) {
    const heuristicLabel = currentIsHeuristic
      ? `current = NVIDIA heuristic ${formatChoice(heuristic.choice)}`
      : heuristic.label;
    parts.push(
      `<path class="heuristic" d="${diamond(heuristic.x, heuristic.y, 9)}"><title>${escapeXml(choiceTitle(heuristic))}</title></path>`,
      labelAt(layout, heuristic.x, heuristic.y, -12, heuristicLabel, 'label-heuristic'),
    );
  }
  parts.push(
    `<rect class="recommended" x="${r1(recommendation.x - 8)}" y="${r1(recommendation.y - 8)}" width="16" height="16">` +
      `<title>${escapeXml(choiceTitle(recommendation))}</title></rect>`,
    labelAt(layout, recommendation.x, recommendation.y, 22, recommendation.label, 'label-recommended'),
  );
  if (current !== null) {
    parts.push(
      `<circle class="current" cx="${r1(current.x)}" cy="${r1(current.y)}" r="11">` +
        `<title>${escapeXml(choiceTitle(current))}</title></circle>`,
    );
    if (!currentIsHeuristic) {
      parts.push(labelAt(layout, current.x, current.y, 4, current.label, 'label-current'));
    }
  }
  parts.push('</svg>');
  return parts.join('\n');
}
