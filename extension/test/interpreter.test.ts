import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import {
  chooseInterpreter,
  discoverInterpreter,
  interpreterCandidates,
  parseProbeOutput,
  probeInterpreter,
  serverArguments,
  type InterpreterCandidate,
} from '../src/interpreter';

const REPO = path.resolve(__dirname, '..', '..', '..');
const VENV_PYTHON = path.join(REPO, '.venv', 'bin', 'python');
const NO_SUCH_PYTHON = path.join(REPO, 'no-such-dir', 'python3');

describe('interpreterCandidates', () => {
  it('uses only the setting when one is given', () => {
    assert.deepEqual(
      interpreterCandidates({ setting: '/opt/py/bin/python', pythonExtension: '/env/bin/python', platform: 'linux' }),
      [{ command: '/opt/py/bin/python', origin: 'setting' }],
    );
  });

  it('tries the Python extension environment before python3 on PATH', () => {
    assert.deepEqual(
      interpreterCandidates({ pythonExtension: '/env/bin/python', platform: 'linux' }),
      [
        { command: '/env/bin/python', origin: 'python-extension' },
        { command: 'python3', origin: 'path' },
      ],
    );
  });

  it('falls back to python3 on PATH, and python first on Windows', () => {
    assert.deepEqual(interpreterCandidates({ setting: '  ', platform: 'linux' }), [{ command: 'python3', origin: 'path' }]);
    assert.deepEqual(
      interpreterCandidates({ platform: 'win32' }).map((c) => c.command),
      ['python', 'python3'],
    );
  });

  it('does not list the same command twice', () => {
    assert.deepEqual(
      interpreterCandidates({ pythonExtension: 'python3', platform: 'linux' }),
      [{ command: 'python3', origin: 'python-extension' }],
    );
  });
});

describe('chooseInterpreter', () => {
  const ext: InterpreterCandidate = { command: '/env/bin/python', origin: 'python-extension' };
  const path3: InterpreterCandidate = { command: 'python3', origin: 'path' };

  it('takes the first candidate that has FlipFlop', () => {
    const choice = chooseInterpreter([
      { candidate: ext, result: { kind: 'missing-flipflop', executable: '/env/bin/python', detail: '' } },
      { candidate: path3, result: { kind: 'ready', executable: '/usr/bin/python3', version: '0.1.0' } },
    ]);
    assert.deepEqual(choice, { kind: 'ready', candidate: path3, executable: '/usr/bin/python3', version: '0.1.0' });
  });

  it('asks to install into the first working Python when none has FlipFlop', () => {
    const choice = chooseInterpreter([
      { candidate: ext, result: { kind: 'not-runnable', detail: 'not found' } },
      { candidate: path3, result: { kind: 'missing-flipflop', executable: '/usr/bin/python3', detail: '' } },
    ]);
    assert.deepEqual(choice, { kind: 'missing-flipflop', candidate: path3, executable: '/usr/bin/python3' });
  });

  it('reports every attempt when no Python runs', () => {
    const probed = [{ candidate: path3, result: { kind: 'not-runnable' as const, detail: 'not found' } }];
    assert.deepEqual(chooseInterpreter(probed), { kind: 'no-python', tried: probed });
  });
});

describe('parseProbeOutput', () => {
  it('reads the ready and missing lines and rejects anything else', () => {
    assert.deepEqual(parseProbeOutput('READY\t/usr/bin/python3\t0.1.0\n'), {
      kind: 'ready', executable: '/usr/bin/python3', version: '0.1.0',
    });
    assert.deepEqual(parseProbeOutput('MISSING\t/usr/bin/python3\tNo module named flipflop\n'), {
      kind: 'missing-flipflop', executable: '/usr/bin/python3', detail: 'No module named flipflop',
    });
    assert.equal(parseProbeOutput('Python 2.7.18').kind, 'not-runnable');
  });
});

describe('probeInterpreter (real processes)', () => {
  it('reports a path that does not exist as not runnable', async () => {
    const result = await probeInterpreter(NO_SUCH_PYTHON);
    assert.deepEqual(result, { kind: 'not-runnable', detail: 'not found' });
  });

  it('finds FlipFlop in the project environment', { skip: !existsSync(VENV_PYTHON) && 'no .venv: run scripts/setup.sh' }, async () => {
    const result = await probeInterpreter(VENV_PYTHON);
    assert.equal(result.kind, 'ready', JSON.stringify(result));
  });

  it('tells a Python without FlipFlop apart from a missing one', async () => {
    // `python3 -I -S` cannot see site-packages, so FlipFlop is missing whatever is installed.
    const isolated = path.join(__dirname, 'isolated-python3');
    const { writeFileSync, chmodSync, rmSync } = await import('node:fs');
    writeFileSync(isolated, '#!/bin/sh\nexec python3 -I -S "$@"\n');
    chmodSync(isolated, 0o755);
    try {
      const result = await probeInterpreter(isolated);
      assert.equal(result.kind, 'missing-flipflop', JSON.stringify(result));
    } finally {
      rmSync(isolated);
    }
  });

  it('walks the candidates in order until one is ready', { skip: !existsSync(VENV_PYTHON) && 'no .venv: run scripts/setup.sh' }, async () => {
    const choice = await discoverInterpreter([
      { command: NO_SUCH_PYTHON, origin: 'python-extension' },
      { command: VENV_PYTHON, origin: 'path' },
    ]);
    assert.equal(choice.kind, 'ready');
    assert.equal(choice.kind === 'ready' && choice.candidate.command, VENV_PYTHON);
  });
});

describe('serverArguments', () => {
  it('starts the server module over stdio', () => {
    assert.deepEqual(serverArguments(), ['-m', 'flipflop.lsp', '--stdio']);
  });
});
