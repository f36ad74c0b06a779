// The workflow bundle: the one set of bundle options (workflows, payload and failure converters,
// workflow interceptor modules) every bundle is built with, whether the worker bundles at start,
// `npm run build:workflows` writes a file for an image, or the test suite builds one; and the check
// that refuses a prebuilt file built from other code than the worker runs.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type BundleOptions } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from '../lib/payload-codec';

export const WORKFLOWS_PATH = require.resolve('../workflows');
/** The payload converter of the worker and its workflow bundle: session bundles get their own encoding. */
export const PAYLOAD_CONVERTER_PATH = require.resolve('../lib/payload-converter');
/**
 * Modules exporting `interceptors` (a WorkflowInterceptorsFactory), loaded into every bundle:
 * tracing, which a run switches on only when its history carries trace context
 * (workflows/tracing-interceptors.ts), so one bundle serves either setting.
 */
export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [require.resolve('../workflows/tracing-interceptors')];

/**
 * Modules of the workflow bundle that every workflow in a worker's reusable V8 context shares
 * instead of evaluating its own copy (the SDK's `preloadModules`): the ABL interpreter and what it
 * imports (re2js among them). They are pure: no workflow API at module scope, no per-workflow
 * state at module scope (only memo caches of values computed from their keys, bounded). The SDK
 * deep-freezes their exports.
 */
export const WORKFLOW_PRELOAD_MODULES = ['../workflows', '../workflows/shared-bundles', '../abl/runtime', '../abl/gather', '../abl/tool-retry', '../abl/tool-access', '../abl/ir'].map((m) => require.resolve(m));

const ROOT = path.resolve(__dirname, '..');
/** The folders whose code can end up in the bundle (workflows import only abl/ and workflows/; the converters live in lib/). */
const BUNDLED_SOURCE_DIRS = ['workflows', 'abl', 'lib'];
const MANIFEST_FORMAT = 1;

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** The options of every workflow bundle of the platform. */
export function workflowBundleOptions(): BundleOptions {
  return {
    workflowsPath: WORKFLOWS_PATH,
    payloadConverterPath: PAYLOAD_CONVERTER_PATH,
    failureConverterPath: FAILURE_CONVERTER_PATH,
    workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES],
    preloadModules: [...WORKFLOW_PRELOAD_MODULES],
    logger: quietLogger,
  };
}

/** Bundles the workflows (a few seconds of CPU): the code a worker loads. */
export async function buildWorkflowBundle(): Promise<string> {
  return (await bundleWorkflowCode(workflowBundleOptions())).code;
}

/** What is written beside a prebuilt bundle (`<bundle>.manifest.json`). */
export interface WorkflowBundleManifest {
  format: number;
  /** sha256 of every source file that can be bundled, and of package-lock.json. */
  sourcesSha256: string;
  /** sha256 of the bundle file itself. */
  bundleSha256: string;
  packageVersion: string;
  builtAt: string;
}

export class WorkflowBundleError extends Error {
  override name = 'WorkflowBundleError';
}

export const manifestPathOf = (bundlePath: string) => `${bundlePath}.manifest.json`;

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return sourceFiles(full);
      return /\.(ts|js|json)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name) ? [full] : [];
    })
    .sort();
}

/**
 * A fingerprint of the code a bundle is built from: the files of the bundled folders (and any
 * interceptor module outside them), by path relative to the project and content, and the
 * lock file (the SDK's and every bundled package's versions). About 1 MB of files, read in a few ms.
 */
export function workflowSourcesFingerprint(root = ROOT): string {
  const hash = createHash('sha256');
  const files = new Set(BUNDLED_SOURCE_DIRS.flatMap((dir) => sourceFiles(path.join(root, dir))));
  for (const module of WORKFLOW_INTERCEPTOR_MODULES) files.add(require.resolve(module));
  files.add(path.join(root, 'package-lock.json'));
  for (const file of [...files].sort()) {
    hash.update(path.relative(root, file).split(path.sep).join('/')).update('\0');
    hash.update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Builds the bundle and writes it with its manifest (`npm run build:workflows`, the test suite). */
export async function writeWorkflowBundle(bundlePath: string, code?: string): Promise<WorkflowBundleManifest> {
  const bundle = code ?? (await buildWorkflowBundle());
  const manifest: WorkflowBundleManifest = {
    format: MANIFEST_FORMAT,
    sourcesSha256: workflowSourcesFingerprint(),
    bundleSha256: sha256(bundle),
    packageVersion: packageVersion(),
    builtAt: new Date().toISOString(),
  };
  writeFileSync(bundlePath, bundle);
  writeFileSync(manifestPathOf(bundlePath), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}

/**
 * The prebuilt bundle at `bundlePath`, checked against this process's code: it exists, has its
 * manifest, is the file the manifest describes, and was built from the same sources. Throws
 * WorkflowBundleError saying which and how to rebuild.
 */
export function verifyWorkflowBundle(bundlePath: string): { code: string; manifest: WorkflowBundleManifest } {
  const rebuild = 'build it from this code with `npm run build:workflows -- <path>`, or unset WORKFLOW_BUNDLE_PATH to bundle at start';
  if (!existsSync(bundlePath)) throw new WorkflowBundleError(`WORKFLOW_BUNDLE_PATH ${bundlePath} does not exist: ${rebuild}`);
  const manifestPath = manifestPathOf(bundlePath);
  if (!existsSync(manifestPath)) throw new WorkflowBundleError(`${manifestPath} is missing (a bundle is written with its manifest): ${rebuild}`);
  let manifest: WorkflowBundleManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as WorkflowBundleManifest;
  } catch (err) {
    throw new WorkflowBundleError(`${manifestPath} is not JSON (${(err as Error).message}): ${rebuild}`);
  }
  if (manifest.format !== MANIFEST_FORMAT) throw new WorkflowBundleError(`${manifestPath} has format ${String(manifest.format)}, this worker reads ${MANIFEST_FORMAT}: ${rebuild}`);
  const code = readFileSync(bundlePath, 'utf8');
  if (sha256(code) !== manifest.bundleSha256) throw new WorkflowBundleError(`${bundlePath} is not the file its manifest describes (changed after it was built): ${rebuild}`);
  const sources = workflowSourcesFingerprint();
  if (sources !== manifest.sourcesSha256) {
    throw new WorkflowBundleError(
      `${bundlePath} was built from other code (version ${manifest.packageVersion}, built ${manifest.builtAt}; its sources ${manifest.sourcesSha256.slice(0, 12)}, this worker's ${sources.slice(0, 12)}): ${rebuild}`,
    );
  }
  return { code, manifest };
}
