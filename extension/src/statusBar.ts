// The status bar item: which GPU the predictions are for, and whether the server runs.
import * as vscode from 'vscode';

import type { ServerState } from './client';
import { gpuStatusText, gpuStatusTooltip } from './messages';

export class GpuStatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem('flipflop.gpu', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'FlipFlop target GPU';
    this.item.command = 'flipflop.selectGpu';
  }

  update(gpuId: string, gpuName: string | undefined, state: ServerState): void {
    const trusted = vscode.workspace.isTrusted;
    this.item.text = state.kind === 'failed' ? `$(warning) ${gpuId}` : gpuStatusText(gpuId);
    const tooltip = gpuStatusTooltip(gpuId, gpuName, trusted);
    this.item.tooltip = state.kind === 'failed' ? `${state.reason}\n\n${tooltip}` : tooltip;
    this.item.backgroundColor = state.kind === 'failed'
      ? new vscode.ThemeColor('statusBarItem.warningBackground')
      : undefined;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
