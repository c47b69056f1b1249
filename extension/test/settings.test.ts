import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  changeNeedsRestart,
  configurationItem,
  configuredInterpreter,
  effectiveValue,
  serverSettings,
  type SettingLayers,
} from '../src/settings';

function inspector(table: Record<string, SettingLayers>): (key: string) => SettingLayers | undefined {
  return (key) => table[key];
}

describe('effectiveValue', () => {
  it('prefers folder over workspace over user over default', () => {
    const layers = { defaultValue: 'd', globalValue: 'g', workspaceValue: 'w', workspaceFolderValue: 'f' };
    assert.equal(effectiveValue('gpu', layers, true), 'f');
    assert.equal(effectiveValue('gpu', { defaultValue: 'd', globalValue: 'g', workspaceValue: 'w' }, true), 'w');
    assert.equal(effectiveValue('gpu', { defaultValue: 'd', globalValue: 'g' }, true), 'g');
    assert.equal(effectiveValue('gpu', { defaultValue: 'd' }, true), 'd');
  });

  it('ignores workspace layers of compiler settings in an untrusted workspace', () => {
    const layers = { defaultValue: '', globalValue: '/usr/local/cuda/bin/nvcc', workspaceValue: './evil.sh' };
    assert.equal(effectiveValue('nvccPath', layers, false), '/usr/local/cuda/bin/nvcc');
    assert.equal(effectiveValue('nvccPath', layers, true), './evil.sh');
  });

  it('keeps workspace layers of harmless settings in an untrusted workspace', () => {
    assert.equal(effectiveValue('gpu', { defaultValue: 'rtx3070', workspaceValue: 'h200' }, false), 'h200');
  });
});

describe('serverSettings', () => {
  const table: Record<string, SettingLayers> = {
    gpu: { defaultValue: 'rtx3070', workspaceValue: 'a100-sxm4-80gb' },
    nvccPath: { defaultValue: '', workspaceValue: '/tmp/not-nvcc' },
    extraArgs: { defaultValue: [], workspaceValue: ['-Xcompiler', '-fplugin=/tmp/x.so'] },
    includePaths: { defaultValue: [], globalValue: ['/opt/include'], workspaceValue: ['third_party'] },
    compileCommands: { defaultValue: '', workspaceFolderValue: 'build/compile_commands.json' },
    arch: { defaultValue: '' },
    slack: { defaultValue: 0.05, globalValue: 0.1 },
    problemSize: { defaultValue: {}, workspaceValue: { threads: [4096] } },
    interpreter: { defaultValue: '', workspaceValue: '/tmp/python' },
  };

  it('passes every server key that has a value and drops empty strings', () => {
    const settings = serverSettings(inspector(table), true);
    assert.deepEqual(settings, {
      gpu: 'a100-sxm4-80gb',
      nvccPath: '/tmp/not-nvcc',
      extraArgs: ['-Xcompiler', '-fplugin=/tmp/x.so'],
      includePaths: ['third_party'],
      compileCommands: 'build/compile_commands.json',
      slack: 0.1,
      problemSize: { threads: [4096] },
    });
  });

  it('never sends client-only keys such as the interpreter', () => {
    assert.equal('interpreter' in serverSettings(inspector(table), true), false);
  });

  it('drops workspace compiler settings without trust but keeps the user ones', () => {
    const settings = serverSettings(inspector(table), false);
    assert.equal(settings.nvccPath, undefined);
    assert.deepEqual(settings.extraArgs, []);
    assert.deepEqual(settings.includePaths, ['/opt/include']);
    assert.equal(settings.compileCommands, undefined);
    assert.equal(settings.gpu, 'a100-sxm4-80gb');
    assert.deepEqual(settings.problemSize, { threads: [4096] });
  });
});

describe('configuredInterpreter', () => {
  it('trims the setting and treats blank as unset', () => {
    assert.equal(configuredInterpreter(inspector({ interpreter: { globalValue: ' /usr/bin/python3 ' } }), true), '/usr/bin/python3');
    assert.equal(configuredInterpreter(inspector({ interpreter: { defaultValue: '' } }), true), undefined);
  });

  it('ignores an interpreter chosen by an untrusted workspace', () => {
    const layers = { interpreter: { defaultValue: '', workspaceValue: './venv/bin/python' } };
    assert.equal(configuredInterpreter(inspector(layers), false), undefined);
    assert.equal(configuredInterpreter(inspector(layers), true), './venv/bin/python');
  });
});

describe('changeNeedsRestart', () => {
  it('restarts for a new interpreter only', () => {
    assert.equal(changeNeedsRestart((s) => s === 'flipflop.interpreter' || s === 'flipflop'), true);
    assert.equal(changeNeedsRestart((s) => s === 'flipflop.gpu' || s === 'flipflop'), false);
  });
});

describe('configurationItem', () => {
  const settings = { gpu: 'h200', slack: 0.1 };
  it('answers the whole section and single keys', () => {
    assert.deepEqual(configurationItem('flipflop', settings), { handled: true, value: settings });
    assert.deepEqual(configurationItem('flipflop.gpu', settings), { handled: true, value: 'h200' });
    assert.deepEqual(configurationItem('flipflop.nvccPath', settings), { handled: true, value: null });
  });
  it('leaves other sections to VS Code', () => {
    assert.equal(configurationItem('editor', settings).handled, false);
    assert.equal(configurationItem(undefined, settings).handled, false);
  });
});
