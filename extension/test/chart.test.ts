import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  axisTicks,
  escapeXml,
  formatBlock,
  formatJoules,
  formatSeconds,
  layoutChart,
  parseKernelChart,
  pointTitle,
  renderChartSvg,
  type KernelChart,
} from '../src/chart';
import { chartHtml, chartSummary, frontRows } from '../src/chartPage';

// Shaped like the server's answer for a memory-bound kernel: small blocks idle the SMs, large
// blocks waste power at the guard.
function sampleChart(): KernelChart {
  const raw = {
    kernel: 'void scale<float>(float*, int)',
    gpu: { id: 'rtx3070', name: 'NVIDIA GeForce RTX 3070' },
    points: [
      { block: [32, 1, 1], power_limit_w: null, time_s: 4.0e-4, power_w: 120, energy_j: 0.048, pareto: false },
      { block: [64, 1, 1], power_limit_w: null, time_s: 2.2e-4, power_w: 150, energy_j: 0.033, pareto: false },
      { block: [128, 1, 1], power_limit_w: null, time_s: 1.6e-4, power_w: 160, energy_j: 0.0256, pareto: true },
      { block: [256, 1, 1], power_limit_w: null, time_s: 1.5e-4, power_w: 180, energy_j: 0.027, pareto: true },
      { block: [512, 1, 1], power_limit_w: null, time_s: 1.45e-4, power_w: 200, energy_j: 0.029, pareto: true },
      { block: [1024, 1, 1], power_limit_w: null, time_s: 1.5e-4, power_w: 210, energy_j: 0.0315, pareto: false },
    ],
    current: { block: [1024, 1, 1], time_s: 1.5e-4, energy_j: 0.0315 },
    heuristic: { block: [1024, 1, 1], time_s: 1.5e-4, energy_j: 0.0315 },
    recommendation: { block: [128, 1, 1], time_s: 1.6e-4, energy_j: 0.0256, power_limit_w: null },
  };
  const parsed = parseKernelChart(raw);
  assert.ok(parsed.ok && parsed.value !== null);
  return parsed.value;
}

describe('parseKernelChart', () => {
  it('accepts null as "no kernel here"', () => {
    assert.deepEqual(parseKernelChart(null), { ok: true, value: null });
  });

  it('rejects malformed answers with a reason', () => {
    const bad = [
      42,
      { gpu: { id: 'x' }, points: [] },
      { kernel: 'k', gpu: { id: 'x' }, points: [{ block: [0], time_s: 1, energy_j: 1 }] },
      { kernel: 'k', gpu: { id: 'x' }, points: [{ block: [32], time_s: -1, energy_j: 1 }] },
      { kernel: 'k', gpu: { id: 'x' }, points: [] },
      { kernel: 'k', gpu: { id: 'x' }, points: [{ block: [32], time_s: 1, energy_j: 1 }] },
      { kernel: 'k', gpu: { id: 'x' }, points: [{ block: [32], time_s: 1, energy_j: 1 }], recommendation: { block: [32] } },
    ];
    for (const value of bad) {
      const parsed = parseKernelChart(value);
      assert.equal(parsed.ok, false, JSON.stringify(value));
    }
  });

  it('pads short block shapes and derives a missing power', () => {
    const chart = sampleChart();
    assert.deepEqual(chart.points[0].block, [32, 1, 1]);
    const parsed = parseKernelChart({
      kernel: 'k', gpu: { id: 'g' }, current: null,
      points: [{ block: [16, 16], time_s: 2, energy_j: 10, pareto: true }],
      heuristic: { block: [256], time_s: 2, energy_j: 10 },
      recommendation: { block: [16, 16], time_s: 2, energy_j: 10 },
    });
    assert.ok(parsed.ok && parsed.value !== null);
    assert.deepEqual(parsed.value.points[0].block, [16, 16, 1]);
    assert.equal(parsed.value.points[0].power_w, 5);
    assert.equal(parsed.value.gpu.name, 'g');
  });

  it('draws a chart without the heuristic or the current launch when the server has neither', () => {
    const parsed = parseKernelChart({
      kernel: 'k', gpu: { id: 'g', name: 'G' }, current: null, heuristic: null,
      points: [{ block: [64], time_s: 1e-3, energy_j: 0.1, pareto: true }],
      recommendation: { block: [64], time_s: 1e-3, energy_j: 0.1 },
    });
    assert.ok(parsed.ok && parsed.value !== null);
    const svg = renderChartSvg(parsed.value);
    assert.doesNotMatch(svg, /class="heuristic"|class="current"/);
    assert.match(svg, /class="recommended"/);
    assert.equal(chartSummary(parsed.value), 'Recommended block 64: 1.00 ms, 100 mJ per launch.');
    const already = { ...parsed.value, current: parsed.value.recommendation };
    assert.equal(chartSummary(already), 'Recommended block 64: 1.00 ms, 100 mJ per launch, which is the current launch.');
  });
});

describe('layoutChart', () => {
  const chart = sampleChart();
  const layout = layoutChart(chart, 720, 440);

  it('keeps every point and marker inside the plot area', () => {
    const { left, right, top, bottom } = layout.plot;
    const markers = [layout.heuristic!, layout.recommendation, layout.current!];
    for (const { x, y } of [...layout.points, ...markers]) {
      assert.ok(x >= left && x <= right, `x=${x}`);
      assert.ok(y >= top && y <= bottom, `y=${y}`);
    }
  });

  it('puts faster configurations left and cheaper ones lower', () => {
    const byBlock = (b: number) => layout.points.find((p) => p.point.block[0] === b)!;
    assert.ok(byBlock(512).x < byBlock(128).x); // 0.145 ms vs 0.16 ms
    assert.ok(byBlock(32).x > byBlock(64).x);
    assert.ok(byBlock(128).y > byBlock(32).y); // 25.6 mJ is lower on screen (larger y) than 48 mJ
  });

  it('orders the Pareto front by time and marks the choices where their points are', () => {
    assert.deepEqual(layout.front.map((p) => p.point.block[0]), [512, 256, 128]);
    const rec = layout.points.find((p) => p.point.block[0] === 128)!;
    assert.deepEqual([layout.recommendation.x, layout.recommendation.y], [rec.x, rec.y]);
    assert.equal(layout.current!.label, 'current 1024');
    assert.equal(layout.heuristic!.label, 'NVIDIA heuristic 1024');
  });

  it('switches to a log axis when values span more than a factor of eight', () => {
    assert.equal(layout.xAxis.log, false);
    const wide = sampleChart();
    wide.points[0] = { ...wide.points[0], time_s: 5e-2 };
    assert.equal(layoutChart(wide).xAxis.log, true);
  });

  it('labels ticks inside the axis range in increasing order', () => {
    for (const ticks of [layout.xTicks, layout.yTicks]) {
      assert.ok(ticks.length >= 3);
      const values = ticks.map((t) => t.value);
      assert.deepEqual([...values].sort((a, b) => a - b), values);
    }
    const logAxis = { min: 1e-5, max: 2e-3, log: true, from: 0, to: 100 };
    assert.deepEqual(axisTicks(logAxis, String).map((t) => t.value).slice(0, 3), [1e-5, 2e-5, 5e-5]);
  });
});

describe('renderChartSvg and chartHtml', () => {
  it('draws one circle per configuration and escapes template names', () => {
    const svg = renderChartSvg(sampleChart());
    assert.equal((svg.match(/<circle class="point"/g) ?? []).length, 3);
    assert.equal((svg.match(/<circle class="pareto"/g) ?? []).length, 3);
    assert.match(svg, /class="front" d="M[^"]+ L[^"]+ L[^"]+"/);
    assert.match(svg, /scale&lt;float&gt;/);
    // The current launch is NVIDIA's choice here: one label says so instead of two overlapping.
    assert.match(svg, />current = NVIDIA heuristic 1024</);
    assert.doesNotMatch(svg, />current 1024</);
    assert.doesNotMatch(svg, /scale<float>/);
  });

  it('runs no script and states the saving against the current launch and the heuristic', () => {
    const chart = sampleChart();
    const html = chartHtml(chart, 'vscode-resource:');
    assert.doesNotMatch(html, /<script/);
    assert.match(html, /default-src 'none'/);
    assert.equal(
      chartSummary(chart),
      'Recommended block 128: 160 µs, 25.6 mJ per launch, saves 18.7 % energy against the current 1024, ' +
        "18.7 % against NVIDIA's occupancy heuristic 1024.",
    );
  });
});

describe('tied shapes', () => {
  // Shaped like the server's answer for a warp-per-row kernel: every 1-D and 2-D split of 128
  // and 256 threads predicts the same, so they are one tie group.
  const tied = [[128, 1], [64, 2], [32, 4], [256, 1], [128, 2]].map(([x, y], index) => ({
    block: [x, y, 1], power_limit_w: null, time_s: 6.83e-4 + index * 1e-9, power_w: 120,
    energy_j: 0.082, pareto: true, tie_group: 0,
  }));
  const raw = {
    kernel: 'softmax_rows', gpu: { id: 'rtx3070', name: 'NVIDIA GeForce RTX 3070' },
    points: [
      ...tied,
      { block: [768, 1, 1], power_limit_w: null, time_s: 1.02e-3, power_w: 120, energy_j: 0.123, pareto: false },
    ],
    tie_groups: ['5 shapes tie within 1% at 683 µs / 82 mJ (128…256 threads in powers of two, any 2-D split)'],
    current: { block: [256, 1, 1], time_s: 6.83e-4, energy_j: 0.082 },
    heuristic: { block: [768, 1, 1], time_s: 1.02e-3, energy_j: 0.123 },
    recommendation: { block: [256, 1, 1], time_s: 6.83e-4, energy_j: 0.082 },
  };

  it('name their group in the tooltip of every tied point and in none other', () => {
    const parsed = parseKernelChart(raw);
    assert.ok(parsed.ok && parsed.value !== null);
    const chart = parsed.value;
    assert.equal(chart.points[1].tie_group, 0);
    assert.equal(chart.points[5].tie_group, undefined);
    assert.match(pointTitle(chart.points[1], chart.tieGroups), /^block 64×2: .*\n5 shapes tie within 1% at 683 µs/);
    assert.doesNotMatch(pointTitle(chart.points[5], chart.tieGroups), /tie/);
    const svg = renderChartSvg(chart);
    assert.equal((svg.match(/5 shapes tie within 1%/g) ?? []).length, 5);
  });

  it('share one row of the Pareto table, followed by the group summary', () => {
    const parsed = parseKernelChart(raw);
    assert.ok(parsed.ok && parsed.value !== null);
    const rows = frontRows(parsed.value);
    assert.equal(rows.length, 2);
    assert.match(rows[0], /<td>128<\/td>/);
    assert.match(rows[1], /class="tie".*5 shapes tie within 1%/);
  });

  it('are read without a tie list from an older server', () => {
    const { tie_groups: _unused, ...older } = raw;
    const parsed = parseKernelChart(older);
    assert.ok(parsed.ok && parsed.value !== null);
    assert.deepEqual(parsed.value.tieGroups, []);
    assert.doesNotMatch(pointTitle(parsed.value.points[0], parsed.value.tieGroups), /\n/);
    assert.equal(frontRows(parsed.value).length, 5);
  });
});

describe('formatting', () => {
  it('chooses readable units', () => {
    assert.equal(formatSeconds(1.5e-4), '150 µs');
    assert.equal(formatSeconds(2.5), '2.50 s');
    assert.equal(formatSeconds(0.0123), '12.3 ms');
    assert.equal(formatJoules(0.0256), '25.6 mJ');
    assert.equal(formatJoules(3), '3.00 J');
    assert.equal(formatBlock([256, 1, 1]), '256');
    assert.equal(formatBlock([16, 16, 1]), '16×16');
    assert.equal(formatBlock([8, 8, 4]), '8×8×4');
    assert.equal(escapeXml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});
