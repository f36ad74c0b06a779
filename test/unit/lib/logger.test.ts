// The logger redacts credentials and tool-secret values wherever a log call passes them.
import { Writable } from 'node:stream';
import { createLogger } from '../../../lib/logger';

it('redacts resolved tool secrets and secret values, at the top level and one level down', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const logger = createLogger({ level: 'info' }, sink);
  logger.info({ secrets: { API_TOKEN: 'tok-1' }, value: 'v-2', call: { secrets: { K: 'tok-3' } }, body: { value: 'v-4' }, tool: 'crm' }, 'tool call');
  const line = JSON.parse(lines[0]!);
  expect(line).toMatchObject({ secrets: '[redacted]', value: '[redacted]', call: { secrets: '[redacted]' }, body: { value: '[redacted]' }, tool: 'crm' });
  for (const v of ['tok-1', 'v-2', 'tok-3', 'v-4']) expect(lines[0]).not.toContain(v);
});
