// The webview panel that shows one kernel's energy/time chart; reused for the next kernel.
import * as vscode from 'vscode';

import type { KernelChart } from './chart';
import { chartHtml } from './chartPage';

export class ChartView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  show(chart: KernelChart): void {
    const title = `Energy/time: ${chart.kernel}`;
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel(
        'flipflop.chart',
        title,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false, enableFindWidget: true },
      );
      this.panel.onDidDispose(() => {
        this.panel = undefined;
      });
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    this.panel.title = title;
    this.panel.webview.html = chartHtml(chart, this.panel.webview.cspSource);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
