// Entry point: wires the server, the status bar, the chart view and the commands together.
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import { parseKernelChart } from './chart';
import { ChartView } from './chartView';
import { CUDA_LANGUAGE_ID, ServerController } from './client';
import { DEFAULT_GPU_ID, gpuName, KNOWN_GPUS, parseProfiles, type GpuProfileSummary } from './gpus';
import {
  analysisSummary,
  NO_KERNEL_AT_CURSOR,
  NOT_A_CUDA_FILE,
  SERVER_NOT_RUNNING,
} from './messages';
import { changeNeedsRestart } from './settings';
import { GpuStatusItem } from './statusBar';

function targetGpu(): string {
  const gpu = vscode.workspace.getConfiguration('flipflop').get<string>('gpu');
  return gpu !== undefined && gpu !== '' ? gpu : DEFAULT_GPU_ID;
}

/** Profiles from the server when it runs (they include calibrated ones), else the shipped list. */
async function availableProfiles(server: ServerController, log: vscode.LogOutputChannel): Promise<GpuProfileSummary[]> {
  const client = server.running;
  if (client !== undefined) {
    try {
      const profiles = parseProfiles(await client.sendRequest('flipflop/profiles', {}));
      if (profiles.length > 0) {
        return profiles;
      }
    } catch (error) {
      log.warn(`flipflop/profiles failed, using the built-in list: ${String(error)}`);
    }
  }
  return [...KNOWN_GPUS];
}

async function selectGpu(server: ServerController, log: vscode.LogOutputChannel): Promise<void> {
  const current = targetGpu();
  const profiles = await availableProfiles(server, log);
  const picked = await vscode.window.showQuickPick(
    profiles.map((profile) => ({
      label: profile.name,
      description: profile.id === current ? `${profile.id} · current` : profile.id,
      detail: profile.arch !== '' ? `compute architecture ${profile.arch}` : undefined,
      picked: profile.id === current,
      id: profile.id,
    })),
    { title: 'FlipFlop: target GPU', placeHolder: 'Predict time and energy for which GPU?', matchOnDescription: true },
  );
  if (picked === undefined || picked.id === current) {
    return;
  }
  const target = vscode.workspace.workspaceFolders !== undefined
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration('flipflop').update('gpu', picked.id, target);
}

function activeCudaEditor(): vscode.TextEditor | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.languageId !== CUDA_LANGUAGE_ID) {
    void vscode.window.showWarningMessage(NOT_A_CUDA_FILE);
    return undefined;
  }
  return editor;
}

async function analyzeCurrentFile(server: ServerController): Promise<void> {
  const editor = activeCudaEditor();
  const client = server.running;
  if (editor === undefined) {
    return;
  }
  if (client === undefined) {
    void vscode.window.showErrorMessage(SERVER_NOT_RUNNING);
    return;
  }
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'FlipFlop: analysing' },
    () => client.sendRequest<{ kernels?: number; diagnostics?: number }>('flipflop/analyzeDocument', {
      textDocument: { uri: client.code2ProtocolConverter.asUri(editor.document.uri) },
    }),
  );
  void vscode.window.showInformationMessage(analysisSummary(result?.kernels ?? 0, result?.diagnostics ?? 0));
}

interface ChartTarget {
  uri: string;
  position: { line: number; character: number };
}

/**
 * The kernel to chart: the code lens passes its document and position (as protocol values), the
 * command palette means the cursor in the active editor.
 */
function chartTarget(client: LanguageClient, uriArgument: unknown, positionArgument: unknown): ChartTarget | undefined {
  const position = positionArgument as { line?: unknown; character?: unknown } | undefined;
  if (typeof uriArgument === 'string' && typeof position?.line === 'number' && typeof position.character === 'number') {
    return { uri: uriArgument, position: { line: position.line, character: position.character } };
  }
  const editor = activeCudaEditor();
  if (editor === undefined) {
    return undefined;
  }
  const cursor = editor.selection.active;
  return {
    uri: client.code2ProtocolConverter.asUri(editor.document.uri),
    position: { line: cursor.line, character: cursor.character },
  };
}

async function showChart(
  server: ServerController,
  view: ChartView,
  uriArgument?: unknown,
  positionArgument?: unknown,
): Promise<void> {
  const client = server.running;
  if (client === undefined) {
    void vscode.window.showErrorMessage(SERVER_NOT_RUNNING);
    return;
  }
  const target = chartTarget(client, uriArgument, positionArgument);
  if (target === undefined) {
    return;
  }
  const answer = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'FlipFlop: computing the chart' },
    () => client.sendRequest<unknown>('flipflop/kernelChart', {
      textDocument: { uri: target.uri },
      position: target.position,
    }),
  );
  const parsed = parseKernelChart(answer);
  if (!parsed.ok) {
    void vscode.window.showErrorMessage(`FlipFlop could not draw the chart: ${parsed.error}.`);
    return;
  }
  if (parsed.value === null) {
    void vscode.window.showInformationMessage(NO_KERNEL_AT_CURSOR);
    return;
  }
  view.show(parsed.value);
}

/** Runs a command and turns any failure into a message instead of a silent rejection. */
function guarded(
  log: vscode.LogOutputChannel,
  action: (...args: unknown[]) => Promise<void>,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    try {
      await action(...args);
    } catch (error) {
      log.error(String(error));
      void vscode.window.showErrorMessage(`FlipFlop: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('FlipFlop', { log: true });
  const server = new ServerController(context, log);
  const status = new GpuStatusItem();
  const chartView = new ChartView();
  let profiles: GpuProfileSummary[] = [...KNOWN_GPUS];
  const refreshStatus = (): void => {
    const gpu = targetGpu();
    status.update(gpu, gpuName(gpu, profiles), server.state);
  };

  context.subscriptions.push(
    log,
    server,
    status,
    chartView,
    server.onDidChangeState(async (state) => {
      if (state.kind === 'running') {
        profiles = await availableProfiles(server, log);
      }
      refreshStatus();
    }),
    vscode.commands.registerCommand('flipflop.restartServer', guarded(log, () => server.restart())),
    vscode.commands.registerCommand('flipflop.selectGpu', guarded(log, () => selectGpu(server, log))),
    vscode.commands.registerCommand('flipflop.analyzeFile', guarded(log, () => analyzeCurrentFile(server))),
    vscode.commands.registerCommand('flipflop.showChart', guarded(log, (uri, position) => showChart(server, chartView, uri, position))),
    vscode.commands.registerCommand('flipflop.showOutput', () => log.show()),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!event.affectsConfiguration('flipflop')) {
        return;
      }
      refreshStatus();
      if (changeNeedsRestart((section) => event.affectsConfiguration(section))) {
        await server.restart();
      } else {
        await server.notifySettingsChanged();
      }
    }),
    // Trust unlocks the workspace's interpreter and compiler settings: start again with them.
    vscode.workspace.onDidGrantWorkspaceTrust(() => server.restart()),
  );
  refreshStatus();
  await server.restart();
}

export function deactivate(): Promise<void> | undefined {
  return undefined;
}
