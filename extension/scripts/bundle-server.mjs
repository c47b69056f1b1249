// Builds FlipFlop's wheel into server/ so the .vsix carries the exact package its install
// message names (the name "flipflop" on PyPI belongs to an unrelated project).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const extensionDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoDir = resolve(extensionDir, '..');
const outDir = join(extensionDir, 'server');
const venvPython = join(repoDir, '.venv', 'bin', 'python');
const python = process.env.PYTHON ?? (existsSync(venvPython) ? venvPython : 'python3');

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
execFileSync(python, ['-m', 'pip', 'wheel', '--no-deps', '--quiet', '--wheel-dir', outDir, repoDir], {
  stdio: 'inherit',
});
const wheels = readdirSync(outDir).filter((name) => name.endsWith('.whl'));
if (wheels.length !== 1) {
  console.error(`expected one wheel in ${outDir}, found: ${wheels.join(', ') || 'none'}`);
  process.exit(1);
}
console.log(`server wheel: ${wheels[0]}`);
