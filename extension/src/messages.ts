// Every sentence the extension shows a user, built from plain data so it can be tested.
import type { InterpreterCandidate, InterpreterOrigin, ProbedCandidate } from './interpreter';

/** Quotes one shell word so the printed command can be pasted as it is. */
export function shellQuote(word: string, platform: NodeJS.Platform): string {
  if (/^[A-Za-z0-9_@%+=:,./\\-]+$/.test(word)) {
    return word;
  }
  if (platform === 'win32') {
    return `"${word.replace(/"/g, '""')}"`;
  }
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The exact command that installs FlipFlop's server into `python`. */
export function installCommand(
  python: string,
  packageSpec: string,
  platform: NodeJS.Platform,
): string {
  return ['-m', 'pip', 'install', packageSpec]
    .reduce((line, word) => `${line} ${shellQuote(word, platform)}`, shellQuote(python, platform));
}

export function describeOrigin(origin: InterpreterOrigin): string {
  switch (origin) {
    case 'setting':
      return 'the flipflop.interpreter setting';
    case 'python-extension':
      return "the Python extension's active environment";
    case 'path':
      return 'PATH';
  }
}

export function missingFlipflopMessage(
  candidate: InterpreterCandidate,
  executable: string,
  command: string,
): string {
  return (
    `FlipFlop's language server is not installed in ${executable} ` +
    `(from ${describeOrigin(candidate.origin)}). Install it with: ${command} — ` +
    'or set flipflop.interpreter to a Python that has it.'
  );
}

export function noPythonMessage(tried: readonly ProbedCandidate[]): string {
  const attempts = tried
    .map(({ candidate, result }) => {
      const why = result.kind === 'not-runnable' ? result.detail : result.kind;
      return `${candidate.command} (${describeOrigin(candidate.origin)}: ${why})`;
    })
    .join('; ');
  return (
    'FlipFlop needs Python 3.10 or newer to run its language server, but none could be started' +
    (attempts === '' ? '.' : `: ${attempts}.`) +
    ' Install Python or set flipflop.interpreter to its path.'
  );
}

export function serverStartedMessage(executable: string, version: string): string {
  return `FlipFlop ${version} language server started with ${executable}`;
}

export function analysisSummary(kernels: number, diagnostics: number): string {
  const kernelWord = kernels === 1 ? 'kernel' : 'kernels';
  if (kernels === 0) {
    return 'FlipFlop found no CUDA kernel in this file.';
  }
  if (diagnostics === 0) {
    return `FlipFlop analysed ${kernels} ${kernelWord}: every launch is already on the energy/time Pareto front.`;
  }
  const findingWord = diagnostics === 1 ? 'finding' : 'findings';
  return `FlipFlop analysed ${kernels} ${kernelWord}: ${diagnostics} ${findingWord}, see the Problems panel.`;
}

export const NO_KERNEL_AT_CURSOR =
  'Place the cursor inside a __global__ kernel or on its <<<…>>> launch to see its energy/time chart.';

export const SERVER_NOT_RUNNING =
  'The FlipFlop language server is not running. Run "FlipFlop: Restart Language Server" or see the FlipFlop output.';

export const NOT_A_CUDA_FILE = 'Open a CUDA file (.cu or .cuh) first.';

export const UNTRUSTED_NOTE =
  'Restricted mode: the workspace\'s nvccPath, extraArgs, includePaths, compileCommands and interpreter settings are ignored until you trust this folder.';

/** Status bar text: short enough for a narrow window, with the GPU the numbers are for. */
export function gpuStatusText(gpuId: string): string {
  return `$(pulse) ${gpuId}`;
}

export function gpuStatusTooltip(gpuId: string, gpuName: string | undefined, trusted: boolean): string {
  const target = gpuName !== undefined ? `${gpuName} (${gpuId})` : gpuId;
  const lines = [`FlipFlop predicts time and energy for ${target}.`, 'Click to choose another GPU.'];
  if (!trusted) {
    lines.push(UNTRUSTED_NOTE);
  }
  return lines.join('\n');
}
