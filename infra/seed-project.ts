// Seeds the dev project with the sample project of examples/support-desk: tool files, agent
// drafts and a first version 1.0.0 of each agent. Runs once: a project that already has agents
// is left alone, so agents deleted or edited in dev stay that way across restarts. Given the
// sample back-end's URL, the tools call it instead of the published example.com hosts.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { importProjectFiles } from '../core/agents/import';
import { type Models } from '../db/models';
import { callsSampleHostElsewhere, pointAtSampleBackend } from './sample-backend';
import { type DevCredentials } from './seed';

export const SAMPLE_PROJECT_DIR = path.resolve(__dirname, '..', 'examples', 'support-desk');

/** Reads a project folder into a file map (project-relative POSIX paths → content). */
export function readProjectDir(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const entry of readdirSync(path.join(dir, rel))) {
      const relPath = rel ? `${rel}/${entry}` : entry;
      const full = path.join(dir, relPath);
      if (statSync(full).isDirectory()) walk(relPath);
      else if (entry === 'project.json' || entry.endsWith('.abl')) files[relPath] = readFileSync(full, 'utf8');
    }
  };
  walk('');
  return files;
}

export interface SeedOptions {
  dir?: string;
  /** The sample back-end (infra/sample-backend.ts) the seeded tools call; unset keeps the published URLs. */
  sampleBackendUrl?: string;
}

/** Returns the names of the agents present in the dev project after seeding. */
export async function seedDevProject(models: Models, credentials: Pick<DevCredentials, 'tenantId' | 'projectId'>, options: SeedOptions = {}): Promise<string[]> {
  const scope = { tenantId: credentials.tenantId, projectId: credentials.projectId };
  if (!(await models.Agent.exists(scope))) {
    const files = readProjectDir(options.dir ?? SAMPLE_PROJECT_DIR);
    const seeded = options.sampleBackendUrl ? pointAtSampleBackend(files, options.sampleBackendUrl) : files;
    await importProjectFiles(models, scope, seeded, { mode: 'create-missing', fallbackDomain: 'dev', createdBy: 'seed' });
  }
  const agents = await models.Agent.find(scope).select({ name: 1 }).sort({ name: 1 }).lean();
  return agents.map((a) => a.name);
}

/**
 * The project's tool files that call a sample host somewhere other than the sample back-end at
 * `backendUrl` (seeded before it existed, or for another SAMPLE_BACKEND_PORT), by name.
 */
export async function toolFilesOffSampleBackend(models: Models, credentials: Pick<DevCredentials, 'tenantId' | 'projectId'>, backendUrl: string): Promise<string[]> {
  const files = await models.ToolFile.find({ tenantId: credentials.tenantId, projectId: credentials.projectId }).select({ name: 1, dslContent: 1 }).sort({ name: 1 }).lean();
  return files.filter((f) => callsSampleHostElsewhere(f.dslContent, backendUrl)).map((f) => f.name);
}
