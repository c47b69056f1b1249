import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';

import {
  analysisSummary,
  gpuStatusText,
  gpuStatusTooltip,
  installCommand,
  missingFlipflopMessage,
  noPythonMessage,
  shellQuote,
} from '../src/messages';

describe('installCommand', () => {
  it('names the interpreter and the bundled wheel', () => {
    assert.equal(
      installCommand('/usr/bin/python3', '/ext/server/flipflop-0.1.0-py3-none-any.whl', 'linux'),
      '/usr/bin/python3 -m pip install /ext/server/flipflop-0.1.0-py3-none-any.whl',
    );
  });

  it('quotes paths with spaces for the platform shell', () => {
    assert.equal(
      installCommand('/home/a b/venv/bin/python', "/x/it's.whl", 'linux'),
      `'/home/a b/venv/bin/python' -m pip install '/x/it'\\''s.whl'`,
    );
    assert.equal(
      installCommand('C:\\Program Files\\Python312\\python.exe', 'C:\\ext\\f.whl', 'win32'),
      '"C:\\Program Files\\Python312\\python.exe" -m pip install C:\\ext\\f.whl',
    );
  });

  it('produces words a POSIX shell reads back unchanged', () => {
    const words = ['/tmp/we ird/py', "it's", 'a"b', '$HOME', 'plain'];
    const line = words.map((w) => shellQuote(w, 'linux')).join(' ');
    const echoed = execFileSync('sh', ['-c', `printf '%s\\n' ${line}`], { encoding: 'utf8' });
    assert.deepEqual(echoed.trimEnd().split('\n'), words);
  });
});

describe('user messages', () => {
  it('says where FlipFlop is missing, why that Python, and how to install it', () => {
    const message = missingFlipflopMessage(
      { command: 'python3', origin: 'path' },
      '/usr/bin/python3',
      '/usr/bin/python3 -m pip install /ext/server/flipflop-0.1.0-py3-none-any.whl',
    );
    assert.match(message, /not installed in \/usr\/bin\/python3 \(from PATH\)/);
    assert.match(message, /Install it with: \/usr\/bin\/python3 -m pip install \/ext\/server\/flipflop-0\.1\.0-py3-none-any\.whl/);
    assert.match(message, /flipflop\.interpreter/);
  });

  it('lists every interpreter tried when none runs', () => {
    const message = noPythonMessage([
      { candidate: { command: '/env/bin/python', origin: 'python-extension' }, result: { kind: 'not-runnable', detail: 'not found' } },
      { candidate: { command: 'python3', origin: 'path' }, result: { kind: 'not-runnable', detail: 'not found' } },
    ]);
    assert.match(message, /\/env\/bin\/python \(the Python extension's active environment: not found\); python3 \(PATH: not found\)/);
  });

  it('summarises an analysis in words that match the counts', () => {
    assert.equal(analysisSummary(0, 0), 'FlipFlop found no CUDA kernel in this file.');
    assert.match(analysisSummary(1, 0), /1 kernel: every launch is already on the energy\/time Pareto front/);
    assert.match(analysisSummary(3, 1), /3 kernels: 1 finding,/);
    assert.match(analysisSummary(2, 4), /2 kernels: 4 findings,/);
  });

  it('shows the GPU in the status bar and restricted mode in its tooltip', () => {
    assert.equal(gpuStatusText('h200'), '$(pulse) h200');
    assert.match(gpuStatusTooltip('h200', 'NVIDIA H200', true), /NVIDIA H200 \(h200\)/);
    assert.doesNotMatch(gpuStatusTooltip('h200', undefined, true), /Restricted mode/);
    assert.match(gpuStatusTooltip('h200', undefined, false), /Restricted mode/);
  });
});
