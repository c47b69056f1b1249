// The manifest (package.json) against the code and the server it mirrors.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { KNOWN_GPUS } from '../src/gpus';
import { CLIENT_SETTING_KEYS, SERVER_SETTING_KEYS, WORKSPACE_RESTRICTED_KEYS } from '../src/settings';

const EXTENSION = path.resolve(__dirname, '..', '..');
const REPO = path.resolve(EXTENSION, '..');
const manifest = JSON.parse(readFileSync(path.join(EXTENSION, 'package.json'), 'utf8'));
const properties: Record<string, { default?: unknown; enum?: string[]; markdownDescription?: string }> =
  manifest.contributes.configuration.properties;

describe('package.json', () => {
  it('contributes exactly the server settings plus the client-only ones', () => {
    const contributed = Object.keys(properties).map((key) => key.replace(/^flipflop\./, '')).sort();
    assert.deepEqual(contributed, [...SERVER_SETTING_KEYS, ...CLIENT_SETTING_KEYS].sort());
  });

  it('describes every setting and gives it a default', () => {
    for (const [key, schema] of Object.entries(properties)) {
      assert.ok(schema.markdownDescription && schema.markdownDescription.length > 20, key);
      assert.notEqual(schema.default, undefined, key);
    }
  });

  it('restricts the same settings in untrusted workspaces as the code does', () => {
    const trust = manifest.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, 'limited');
    assert.deepEqual(
      [...trust.restrictedConfigurations].sort(),
      WORKSPACE_RESTRICTED_KEYS.map((key) => `flipflop.${key}`).sort(),
    );
  });

  it('offers the GPU profiles that ship in calibration/profiles', () => {
    const shipped = readdirSync(path.join(REPO, 'calibration', 'profiles'))
      .filter((name) => name.endsWith('.json'))
      .map((name) => name.replace(/\.json$/, ''))
      .sort();
    assert.deepEqual([...properties['flipflop.gpu'].enum!].sort(), shipped);
    assert.deepEqual(KNOWN_GPUS.map((gpu) => gpu.id), properties['flipflop.gpu'].enum);
    assert.ok(shipped.includes(properties['flipflop.gpu'].default as string));
  });

  it('names each shipped GPU and architecture as its profile does', () => {
    for (const gpu of KNOWN_GPUS) {
      const profile = JSON.parse(readFileSync(path.join(REPO, 'calibration', 'profiles', `${gpu.id}.json`), 'utf8'));
      assert.equal(gpu.name, profile.name, gpu.id);
      assert.equal(gpu.arch, profile.arch, gpu.id);
    }
  });

  it('mirrors the keys the language server parses', () => {
    const serverSettings = readFileSync(path.join(REPO, 'server', 'flipflop', 'lsp', 'settings.py'), 'utf8');
    const parsers = serverSettings.slice(serverSettings.indexOf('_PARSERS'));
    const parsed = [...parsers.slice(0, parsers.indexOf('}')).matchAll(/"(\w+)":/g)].map((m) => m[1]);
    assert.deepEqual(parsed.sort(), [...SERVER_SETTING_KEYS].sort());
  });

  it('registers every contributed command', () => {
    const source = readFileSync(path.join(EXTENSION, 'src', 'extension.ts'), 'utf8');
    for (const { command } of manifest.contributes.commands as { command: string }[]) {
      assert.match(source, new RegExp(`registerCommand\\('${command.replace('.', '\\.')}'`), command);
    }
  });

  it('pins every dependency to one version', () => {
    for (const [name, version] of Object.entries({ ...manifest.dependencies, ...manifest.devDependencies })) {
      assert.match(String(version), /^\d+\.\d+\.\d+$/, name);
    }
  });
});
