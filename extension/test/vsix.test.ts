// The packaged .vsix: what it holds and how big it is. Build it first with `npm run package`.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { inflateRawSync } from 'node:zlib';

const VSIX = path.resolve(__dirname, '..', '..', 'flipflop.vsix');
// The bundle is ~0.4 MB and the server wheel ~0.2 MB; anything much larger means node_modules or
// test data slipped in.
const MAX_VSIX_BYTES = 2 * 1024 * 1024;

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  localHeaderOffset: number;
}

/** Reads the central directory of a zip archive (the .vsix format). */
function zipEntries(archive: Buffer): ZipEntry[] {
  const endOfDirectory = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(endOfDirectory >= 0, 'not a zip archive');
  const count = archive.readUInt16LE(endOfDirectory + 10);
  let offset = archive.readUInt32LE(endOfDirectory + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    assert.equal(archive.readUInt32LE(offset), 0x02014b50, 'bad central directory entry');
    const nameLength = archive.readUInt16LE(offset + 28);
    const extraLength = archive.readUInt16LE(offset + 30);
    const commentLength = archive.readUInt16LE(offset + 32);
    entries.push({
      method: archive.readUInt16LE(offset + 10),
      compressedSize: archive.readUInt32LE(offset + 20),
      localHeaderOffset: archive.readUInt32LE(offset + 42),
      name: archive.toString('utf8', offset + 46, offset + 46 + nameLength),
    });
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

function readEntry(archive: Buffer, entry: ZipEntry): Buffer {
  const header = entry.localHeaderOffset;
  const start = header + 30 + archive.readUInt16LE(header + 26) + archive.readUInt16LE(header + 28);
  const data = archive.subarray(start, start + entry.compressedSize);
  return entry.method === 0 ? data : inflateRawSync(data);
}

describe('flipflop.vsix', { skip: !existsSync(VSIX) && 'flipflop.vsix not built: run npm run package' }, () => {
  const archive = existsSync(VSIX) ? readFileSync(VSIX) : Buffer.alloc(0);
  const names = () => zipEntries(archive).map((entry) => entry.name);

  it(`is smaller than ${MAX_VSIX_BYTES} bytes`, () => {
    assert.ok(archive.length < MAX_VSIX_BYTES, `${archive.length} bytes`);
  });

  it('holds the bundle, the manifest, the readme and the server wheel', () => {
    const files = names();
    for (const expected of ['extension/package.json', 'extension/dist/extension.js', 'extension/readme.md']) {
      assert.ok(files.includes(expected), `${expected} missing from ${files.join(', ')}`);
    }
    assert.ok(files.some((name) => /^extension\/server\/flipflop-[^/]+-py3-none-any\.whl$/.test(name)));
  });

  it('leaves out sources, tests, dependencies and caches', () => {
    const stray = names().filter((name) =>
      /^extension\/(src|test|out|node_modules|scripts|\.e2e|test-fixtures)\//.test(name) || name.endsWith('.ts'),
    );
    assert.deepEqual(stray, []);
  });

  it('starts from the bundled entry point with vscode-languageclient inside it', () => {
    const entries = zipEntries(archive);
    const manifest = JSON.parse(readEntry(archive, entries.find((e) => e.name === 'extension/package.json')!).toString('utf8'));
    assert.equal(manifest.main, './dist/extension.js');
    const bundle = readEntry(archive, entries.find((e) => e.name === 'extension/dist/extension.js')!).toString('utf8');
    assert.match(bundle, /flipflop\/kernelChart/);
    assert.match(bundle, /workspace\/configuration/);
    assert.doesNotMatch(bundle, /require\("vscode-languageclient/);
  });
});
