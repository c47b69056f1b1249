// Which Python runs the language server. The order is the one users expect: what they configured,
// then what the Python extension has selected for this workspace, then `python3` on PATH.
import { execFile } from 'node:child_process';

export type InterpreterOrigin = 'setting' | 'python-extension' | 'path';

export interface InterpreterCandidate {
  command: string;
  origin: InterpreterOrigin;
}

export interface InterpreterSources {
  /** `flipflop.interpreter`, already filtered for workspace trust. */
  setting?: string;
  /** Executable of the Python extension's active environment, when that extension is present. */
  pythonExtension?: string;
  platform: NodeJS.Platform;
}

/** The interpreters to try, best first. An explicit setting is the only candidate. */
export function interpreterCandidates(sources: InterpreterSources): InterpreterCandidate[] {
  if (sources.setting !== undefined && sources.setting.trim() !== '') {
    return [{ command: sources.setting.trim(), origin: 'setting' }];
  }
  const candidates: InterpreterCandidate[] = [];
  if (sources.pythonExtension !== undefined && sources.pythonExtension.trim() !== '') {
    candidates.push({ command: sources.pythonExtension.trim(), origin: 'python-extension' });
  }
  // Windows installs `python` (and the `py` launcher); elsewhere `python` may still be Python 2.
  const onPath = sources.platform === 'win32' ? ['python', 'python3'] : ['python3'];
  for (const command of onPath) {
    if (!candidates.some((candidate) => candidate.command === command)) {
      candidates.push({ command, origin: 'path' });
    }
  }
  return candidates;
}

/** What running a candidate told us. */
export type ProbeResult =
  | { kind: 'ready'; version: string; executable: string }
  | { kind: 'missing-flipflop'; executable: string; detail: string }
  | { kind: 'not-runnable'; detail: string };

export interface ProbedCandidate {
  candidate: InterpreterCandidate;
  result: ProbeResult;
}

export type InterpreterChoice =
  | { kind: 'ready'; candidate: InterpreterCandidate; version: string; executable: string }
  | { kind: 'missing-flipflop'; candidate: InterpreterCandidate; executable: string }
  | { kind: 'no-python'; tried: ProbedCandidate[] };

/**
 * Picks the first candidate with FlipFlop installed. When none has it, points the user at the
 * first Python that does run, since that is where they expect the install to go.
 */
export function chooseInterpreter(probed: readonly ProbedCandidate[]): InterpreterChoice {
  for (const { candidate, result } of probed) {
    if (result.kind === 'ready') {
      return { kind: 'ready', candidate, version: result.version, executable: result.executable };
    }
  }
  for (const { candidate, result } of probed) {
    if (result.kind === 'missing-flipflop') {
      return { kind: 'missing-flipflop', candidate, executable: result.executable };
    }
  }
  return { kind: 'no-python', tried: [...probed] };
}

// `flipflop.lsp` rather than `flipflop`: an unrelated package on PyPI is also called flipflop.
const PROBE_SCRIPT = [
  'import sys',
  'try:',
  '    import flipflop, flipflop.lsp',
  'except ImportError as error:',
  '    print("MISSING", sys.executable, error, sep="\\t")',
  'else:',
  '    print("READY", sys.executable, getattr(flipflop, "__version__", "unknown"), sep="\\t")',
].join('\n');

/** Reads the one line the probe script prints. */
export function parseProbeOutput(stdout: string): ProbeResult {
  const line = stdout.split(/\r?\n/).find((text) => /^(READY|MISSING)\t/.test(text));
  if (line === undefined) {
    return { kind: 'not-runnable', detail: `unexpected output: ${stdout.trim().slice(0, 200)}` };
  }
  const [status, executable = '', rest = ''] = line.split('\t');
  return status === 'READY'
    ? { kind: 'ready', executable, version: rest }
    : { kind: 'missing-flipflop', executable, detail: rest };
}

/** Runs a candidate once to learn whether it exists and can import FlipFlop's server. */
export function probeInterpreter(command: string, timeoutMs = 20000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      ['-c', PROBE_SCRIPT],
      { timeout: timeoutMs, windowsHide: true },
      (error, stdout, stderr) => {
        const output = String(stdout);
        if (error !== null && !/^(READY|MISSING)\t/m.test(output)) {
          const reason = (error as NodeJS.ErrnoException).code === 'ENOENT'
            ? 'not found'
            : String(stderr).trim().split(/\r?\n/).pop() || error.message;
          resolve({ kind: 'not-runnable', detail: reason });
          return;
        }
        resolve(parseProbeOutput(output));
      },
    );
  });
}

/** Probes the candidates in order and stops at the first one that is ready. */
export async function discoverInterpreter(
  candidates: readonly InterpreterCandidate[],
  probe: (command: string) => Promise<ProbeResult> = probeInterpreter,
): Promise<InterpreterChoice> {
  const probed: ProbedCandidate[] = [];
  for (const candidate of candidates) {
    const result = await probe(candidate.command);
    probed.push({ candidate, result });
    if (result.kind === 'ready') {
      break;
    }
  }
  return chooseInterpreter(probed);
}

/** Arguments that start the server over stdio. */
export function serverArguments(): string[] {
  return ['-m', 'flipflop.lsp', '--stdio'];
}
