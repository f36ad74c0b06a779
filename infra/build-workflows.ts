// `npm run build:workflows -- [path]`: bundles the workflows once (the image build runs it) and
// writes the bundle with its manifest, for the worker to load from WORKFLOW_BUNDLE_PATH instead of
// bundling at every start (workers/workflow-bundle.ts).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { writeWorkflowBundle } from '../workers/workflow-bundle';

async function main(): Promise<void> {
  const target = path.resolve(process.argv[2] ?? 'dist/workflow-bundle.js');
  mkdirSync(path.dirname(target), { recursive: true });
  const manifest = await writeWorkflowBundle(target);
  process.stdout.write(`${JSON.stringify({ bundle: target, ...manifest }, null, 2)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`build:workflows failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
