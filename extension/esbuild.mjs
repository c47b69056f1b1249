// Bundles the extension and vscode-languageclient into one CommonJS file for the .vsix.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: ['vscode'],
  sourcemap: false,
  minify: process.argv.includes('--minify'),
  logLevel: 'warning',
});
