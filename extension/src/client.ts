// Starts, stops and talks to the FlipFlop language server.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';

import {
  discoverInterpreter,
  interpreterCandidates,
  serverArguments,
  type InterpreterChoice,
} from './interpreter';
import { installCommand, missingFlipflopMessage, noPythonMessage, serverStartedMessage } from './messages';
import { pythonExtensionInterpreter } from './pythonExtension';
import {
  configurationItem,
  configuredInterpreter,
  serverSettings,
  type ServerSettings,
} from './settings';

export const CUDA_LANGUAGE_ID = 'cuda-cpp';

export type ServerState =
  | { kind: 'stopped' }
  | { kind: 'starting' }
  | { kind: 'running'; executable: string; version: string }
  | { kind: 'failed'; reason: string };

/** The settings the server should see for `scope`, with workspace trust applied. */
export function currentServerSettings(scope?: vscode.Uri): ServerSettings {
  const config = vscode.workspace.getConfiguration('flipflop', scope);
  return serverSettings((key) => config.inspect(key), vscode.workspace.isTrusted);
}

/** The bundled wheel of the server, so the install command works without a package index name. */
export function bundledWheel(extensionPath: string): string | undefined {
  const directory = path.join(extensionPath, 'server');
  try {
    const wheel = fs.readdirSync(directory).find((name) => /^flipflop-.*\.whl$/.test(name));
    return wheel === undefined ? undefined : path.join(directory, wheel);
  } catch {
    return undefined;
  }
}

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private pending: Promise<void> = Promise.resolve();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private stateValue: ServerState = { kind: 'stopped' };

  readonly onDidChangeState = this.stateEmitter.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  get state(): ServerState {
    return this.stateValue;
  }

  get running(): LanguageClient | undefined {
    return this.stateValue.kind === 'running' ? this.client : undefined;
  }

  /** Starts (or restarts) the server; calls are queued so two restarts never overlap. */
  restart(): Promise<void> {
    this.pending = this.pending.then(async () => {
      await this.stopClient();
      await this.startClient();
    });
    return this.pending;
  }

  stop(): Promise<void> {
    this.pending = this.pending.then(() => this.stopClient());
    return this.pending;
  }

  /** Tells a running server that settings changed; it pulls them with workspace/configuration. */
  async notifySettingsChanged(): Promise<void> {
    const client = this.running;
    if (client !== undefined) {
      await client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { flipflop: currentServerSettings() },
      });
    }
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
  }

  private setState(state: ServerState): void {
    this.stateValue = state;
    this.stateEmitter.fire(state);
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.warn(`Stopping the language server: ${String(error)}`);
      }
      await client.dispose();
    }
    this.setState({ kind: 'stopped' });
  }

  private async findInterpreter(): Promise<InterpreterChoice> {
    const resource = vscode.window.activeTextEditor?.document.uri
      ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    const config = vscode.workspace.getConfiguration('flipflop', resource);
    const setting = configuredInterpreter((key) => config.inspect(key), vscode.workspace.isTrusted);
    const fromPythonExtension = setting === undefined
      ? await pythonExtensionInterpreter(resource, this.log)
      : undefined;
    const candidates = interpreterCandidates({
      setting,
      pythonExtension: fromPythonExtension,
      platform: process.platform,
    });
    this.log.info(`Interpreter candidates: ${candidates.map((c) => `${c.command} (${c.origin})`).join(', ')}`);
    return discoverInterpreter(candidates);
  }

  private async startClient(): Promise<void> {
    this.setState({ kind: 'starting' });
    const choice = await this.findInterpreter();
    if (choice.kind !== 'ready') {
      this.reportMissingServer(choice);
      return;
    }
    this.log.info(serverStartedMessage(choice.executable, choice.version));
    const serverOptions: ServerOptions = {
      command: choice.executable,
      args: serverArguments(),
      options: { env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      // nvcc compiles files on disk (includes resolve next to them), so unsaved buffers are left out.
      documentSelector: [{ language: CUDA_LANGUAGE_ID, scheme: 'file' }],
      initializationOptions: currentServerSettings(),
      outputChannel: this.log,
      traceOutputChannel: this.log,
      middleware: {
        workspace: {
          // Answer from our own view of the settings so workspace trust is applied to every pull.
          configuration: async (params, token, next) => {
            const answers: unknown[] = [];
            for (const item of params.items) {
              const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
              const ours = configurationItem(item.section, currentServerSettings(scope));
              if (ours.handled) {
                answers.push(ours.value);
                continue;
              }
              const theirs = await next({ items: [item] }, token);
              answers.push(Array.isArray(theirs) ? theirs[0] : null);
            }
            return answers;
          },
        },
      },
    };
    const client = new LanguageClient('flipflop', 'FlipFlop', serverOptions, clientOptions);
    this.client = client;
    try {
      await client.start();
      this.setState({ kind: 'running', executable: choice.executable, version: choice.version });
    } catch (error) {
      const reason = `The FlipFlop language server failed to start with ${choice.executable}: ${String(error)}`;
      this.log.error(reason);
      this.setState({ kind: 'failed', reason });
      void vscode.window.showErrorMessage(reason, 'Show Output').then((answer) => {
        if (answer === 'Show Output') {
          this.log.show();
        }
      });
    }
  }

  /** Records why there is no server and offers the fix without holding up the restart queue. */
  private reportMissingServer(choice: Exclude<InterpreterChoice, { kind: 'ready' }>): void {
    if (choice.kind === 'no-python') {
      const message = noPythonMessage(choice.tried);
      this.log.error(message);
      this.setState({ kind: 'failed', reason: message });
      void vscode.window.showErrorMessage(message, 'Open Settings').then((answer) => {
        if (answer === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'flipflop.interpreter');
        }
      });
      return;
    }
    const wheel = bundledWheel(this.context.extensionPath) ?? '<path to the FlipFlop source checkout>';
    const command = installCommand(choice.executable, wheel, process.platform);
    const message = missingFlipflopMessage(choice.candidate, choice.executable, command);
    this.log.error(message);
    this.setState({ kind: 'failed', reason: message });
    void this.offerInstall(message, command);
  }

  private async offerInstall(message: string, command: string): Promise<void> {
    const answer = await vscode.window.showErrorMessage(
      message,
      'Install in Terminal',
      'Copy Command',
      'Choose Interpreter',
    );
    if (answer === 'Install in Terminal') {
      const terminal = vscode.window.createTerminal('FlipFlop install');
      terminal.show();
      terminal.sendText(command);
    } else if (answer === 'Copy Command') {
      await vscode.env.clipboard.writeText(command);
    } else if (answer === 'Choose Interpreter') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'flipflop.interpreter');
    }
  }
}
