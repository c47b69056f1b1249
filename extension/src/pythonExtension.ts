// The interpreter the Python extension (ms-python.python) has selected, when it is installed.
// Only the few API members we call are declared, so the extension needs no extra dependency.
import * as vscode from 'vscode';

interface EnvironmentPath {
  id: string;
  path: string;
}

interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** Executable of the active environment for `resource`, or undefined when there is none. */
export async function pythonExtensionInterpreter(
  resource: vscode.Uri | undefined,
  log: vscode.LogOutputChannel,
): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (extension === undefined) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    if (api.environments !== undefined) {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      const executable = resolved?.executable.uri?.fsPath;
      if (executable !== undefined) {
        return executable;
      }
    }
    // Older releases of the Python extension only offer the execution details.
    return api.settings?.getExecutionDetails(resource).execCommand?.[0];
  } catch (error) {
    log.warn(`The Python extension did not report an interpreter: ${String(error)}`);
    return undefined;
  }
}
