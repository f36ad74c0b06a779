// The committed client types (sdk/schema.d.ts) are those the API's OpenAPI document generates
// now: a route, field or status changed without regenerating fails here. It runs the generator
// itself (npm run sdk:generate, into a temporary file) and compares.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../..');
const SCHEMA_PATH = join(ROOT, 'sdk/schema.d.ts');

jest.setTimeout(120_000);

it('sdk/schema.d.ts matches the types generated from the current API', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sdk-schema-'));
  try {
    const fresh = join(dir, 'schema.d.ts');
    execFileSync(process.execPath, ['--import', 'tsx', 'sdk/generate.ts', '--out', fresh], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    const generated = readFileSync(fresh, 'utf8').split('\n');
    const committed = readFileSync(SCHEMA_PATH, 'utf8').split('\n');
    const at = generated.findIndex((line, i) => line !== committed[i]);
    const differs = at >= 0 || generated.length !== committed.length;
    const where = at >= 0 ? at : Math.min(generated.length, committed.length);
    if (differs) {
      throw new Error(
        `sdk/schema.d.ts is out of step with the API (first difference at line ${where + 1}:\n` +
          `  committed: ${committed[where] ?? '<end of file>'}\n  generated: ${generated[where] ?? '<end of file>'}).\n` +
          'Run `npm run sdk:generate` and commit sdk/schema.d.ts.',
      );
    }
    expect(generated.join('\n')).toContain('"/api/v1/chat/agent"');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
