// The `flipflop.*` settings as the language server receives them, computed from VS Code's
// layered configuration. Pure: the caller passes `inspect` results, so this runs under node:test.

/** Keys the server reads from `initializationOptions` and `workspace/configuration`. */
export const SERVER_SETTING_KEYS = [
  'gpu',
  'nvccPath',
  'arch',
  'compileTimeout',
  'extraArgs',
  'includePaths',
  'compileCommands',
  'slack',
  'confidence',
  'powerLimits',
  'minSaving',
  'inlayHints',
  'codeLens',
  'debounceMs',
  'maxFileSize',
  'problemSize',
] as const;

/** Keys only the client uses; they never travel to the server. */
export const CLIENT_SETTING_KEYS = ['interpreter', 'trace.server'] as const;

/**
 * Settings that choose a program or its flags. A folder someone sent us must not decide them, so
 * in an untrusted workspace only the user's own value counts (mirrors `restrictedConfigurations`
 * in package.json).
 */
export const WORKSPACE_RESTRICTED_KEYS = [
  'interpreter',
  'nvccPath',
  'extraArgs',
  'includePaths',
  'compileCommands',
] as const;

/** Settings that only take effect when the server process starts again. */
export const RESTART_KEYS = ['interpreter'] as const;

export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];

export interface ProblemSize {
  grid?: number[];
  threads?: number[];
}

export interface ServerSettings {
  gpu?: string;
  nvccPath?: string;
  arch?: string;
  compileTimeout?: number;
  extraArgs?: string[];
  includePaths?: string[];
  compileCommands?: string;
  slack?: number;
  confidence?: number | 'off';
  powerLimits?: boolean;
  minSaving?: number;
  inlayHints?: boolean;
  codeLens?: boolean;
  debounceMs?: number;
  maxFileSize?: number;
  problemSize?: ProblemSize;
}

/** The layers of one setting, as `WorkspaceConfiguration.inspect` reports them. */
export interface SettingLayers {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** Looks up the layers of `flipflop.<key>`; undefined when the key is unknown to VS Code. */
export type SettingInspector = (key: string) => SettingLayers | undefined;

export function isWorkspaceRestricted(key: string): boolean {
  return (WORKSPACE_RESTRICTED_KEYS as readonly string[]).includes(key);
}

/** The value VS Code would use, except that workspace layers of restricted keys need trust. */
export function effectiveValue(key: string, layers: SettingLayers, trusted: boolean): unknown {
  const useWorkspace = trusted || !isWorkspaceRestricted(key);
  const ordered = useWorkspace
    ? [layers.workspaceFolderValue, layers.workspaceValue, layers.globalValue, layers.defaultValue]
    : [layers.globalValue, layers.defaultValue];
  return ordered.find((value) => value !== undefined);
}

/** Everything the server should see, with empty strings dropped so the server's defaults apply. */
export function serverSettings(inspect: SettingInspector, trusted: boolean): ServerSettings {
  const settings: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    const layers = inspect(key);
    if (layers === undefined) {
      continue;
    }
    const value = effectiveValue(key, layers, trusted);
    if (value === undefined || value === null || value === '') {
      continue;
    }
    settings[key] = value;
  }
  return settings as ServerSettings;
}

/** The configured interpreter, honouring workspace trust; undefined when none is set. */
export function configuredInterpreter(
  inspect: SettingInspector,
  trusted: boolean,
): string | undefined {
  const layers = inspect('interpreter');
  if (layers === undefined) {
    return undefined;
  }
  const value = effectiveValue('interpreter', layers, trusted);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Whether a configuration change must restart the server rather than be sent to it. */
export function changeNeedsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_KEYS.some((key) => affects(`flipflop.${key}`));
}

/**
 * Answers one `workspace/configuration` item: the whole `flipflop` section, or one key of it
 * (`flipflop.gpu`). Sections that are not ours come back with `handled: false`.
 */
export function configurationItem(
  section: string | undefined,
  settings: ServerSettings,
): { handled: boolean; value: unknown } {
  if (section === 'flipflop') {
    return { handled: true, value: settings };
  }
  if (section !== undefined && section.startsWith('flipflop.')) {
    const key = section.slice('flipflop.'.length);
    return { handled: true, value: (settings as Record<string, unknown>)[key] ?? null };
  }
  return { handled: false, value: undefined };
}
