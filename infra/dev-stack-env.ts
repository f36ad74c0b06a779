// The environment that runs `npm start`'s stack (infra/dev-stack.ts) on ports and a data directory
// of the caller's choosing, with its own Temporal and store: for the tests and benches that start
// it beside a stack of the developer's own.
import { freePort } from './processes';

export interface DevStackPorts {
  api: number;
  temporal: number;
  ui: number;
  mongo: number;
  postgres: number;
  backend: number;
}

export async function freeDevStackPorts(): Promise<DevStackPorts> {
  return { api: await freePort(), temporal: await freePort(), ui: await freePort(), mongo: await freePort(), postgres: await freePort(), backend: await freePort() };
}

/** `base` (this process's environment by default) with the stack's data, ports and quiet logs, and no external Temporal or store. */
export function devStackEnv(dataDir: string, ports: DevStackPorts, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...base,
    SWITCHBOARD_DATA_DIR: dataDir,
    PORT: String(ports.api),
    TEMPORAL_PORT: String(ports.temporal),
    TEMPORAL_UI_PORT: String(ports.ui),
    FERRETDB_PORT: String(ports.mongo),
    POSTGRES_PORT: String(ports.postgres),
    SAMPLE_BACKEND_PORT: String(ports.backend),
    LOG_LEVEL: 'warn',
  };
  delete env.TEMPORAL_ADDRESS;
  delete env.MONGODB_URI;
  return env;
}
