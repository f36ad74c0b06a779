// docs/abl.md lists every diagnostic code of the registry, with its severity.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DIAGNOSTICS } from '../../../abl';

describe('docs/abl.md', () => {
  const doc = readFileSync(join(__dirname, '../../../docs/abl.md'), 'utf8');
  it.each(Object.entries(DIAGNOSTICS))('documents %s', (code, d) => {
    expect(doc).toContain(`| ${code} | ${d.severity} | ${d.title}`);
  });
});
