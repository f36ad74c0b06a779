// The deployment files under deploy/ keep their invariants: every YAML parses; images are pinned
// (never `latest`), processes run as non-root, the API has its probes, every container has
// resources, the stop grace outlasts SHUTDOWN_GRACE_MS, the worker image loads a prebuilt
// bundle, and the voice agent has its own command, queue, probes and measured size. Cheap: no Docker, Helm or cluster (`npm run deploy:lint` renders and validates them).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments, parse } from 'yaml';

const DEPLOY = path.join(__dirname, '../../../deploy');
const CHART = path.join(DEPLOY, 'helm/switchboard');
const read = (file: string) => readFileSync(path.join(DEPLOY, file), 'utf8');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

type Json = Record<string, unknown>;
const compose = parse(read('compose.yaml')) as { services: Record<string, Json> };
const values = parse(read('helm/switchboard/values.yaml')) as {
  images: Record<string, { repository: string; tag: string }>;
  shutdownGraceMs: number;
  podSecurityContext: { runAsNonRoot: boolean; runAsUser: number };
  containerSecurityContext: { allowPrivilegeEscalation: boolean };
  api: { resources: { requests: Json; limits: Json } };
  worker: { resources: { requests: Json; limits: Json }; maxCachedWorkflows: number };
  voiceAgent: { resources: { requests: Json; limits: Json }; maxRooms: number; bridge: { port: number } };
};

it('parses every YAML file outside the Helm templates', () => {
  const files = filesUnder(DEPLOY).filter((f) => /\.ya?ml$/.test(f) && !f.includes(`${path.sep}templates${path.sep}`));
  expect(files.length).toBeGreaterThanOrEqual(5);
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) expect([file, doc.errors]).toEqual([file, []]);
  }
});

it('pins every image, and none to latest', () => {
  const images = [
    // A compose variable's default stands for it (deploy/.env.example sets the same).
    ...Object.values(compose.services).map((s) => String(s.image).replace(/\$\{[A-Z_]+:-([^}]+)\}/g, '$1')),
    ...Object.values(values.images).flatMap((i) => (typeof i === 'object' ? [`${i.repository}:${i.tag}`] : [])),
    ...[...read('Dockerfile').matchAll(/^ARG NODE_IMAGE=(\S+)/gm)].map((m) => m[1]!),
  ];
  expect(images.length).toBeGreaterThan(8);
  for (const image of images) {
    const tag = image.split('@')[0]!.split(':')[1];
    expect([image, tag && tag !== 'latest' && /\d/.test(tag)]).toEqual([image, true]);
  }
});

it('runs the images as a non-root user, with production dependencies only and a prebuilt bundle', () => {
  const dockerfile = read('Dockerfile');
  expect(dockerfile).toMatch(/npm ci --omit=dev/);
  // The stages that run (runtime and the two targets on it) switch to a numeric non-root user.
  const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));
  expect(runtime).toMatch(/^USER [1-9]\d*:[1-9]\d*$/m);
  expect(runtime).not.toMatch(/^USER (0|root)\b/m);
  const api = dockerfile.slice(dockerfile.indexOf(' AS api'), dockerfile.indexOf(' AS worker'));
  expect(api).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
  const worker = dockerfile.slice(dockerfile.indexOf(' AS worker'));
  expect(worker).toMatch(/COPY --from=bundle .*workflow-bundle\.js .*workflow-bundle\.js\.manifest\.json/);
  expect(worker).toMatch(/^ENV WORKFLOW_BUNDLE_PATH=\/app\/dist\/workflow-bundle\.js$/m);
  expect(values.podSecurityContext).toMatchObject({ runAsNonRoot: true });
  expect(values.podSecurityContext.runAsUser).toBeGreaterThan(0);
  expect(values.containerSecurityContext.allowPrivilegeEscalation).toBe(false);
  // No secret value in the chart's values: they come from the operator's Secret.
  expect(read('helm/switchboard/values.yaml')).not.toMatch(/JWT_SECRET:|ENCRYPTION_KEYS:|PLATFORM_ADMIN_TOKEN:/);
});

it('gives the API its probes and every container its resources', () => {
  const apiTemplate = readFileSync(path.join(CHART, 'templates/api.yaml'), 'utf8');
  expect(apiTemplate).toMatch(/livenessProbe:\s+httpGet:\s+path: \/healthz/);
  expect(apiTemplate).toMatch(/readinessProbe:\s+httpGet:\s+path: \/readyz/);
  for (const name of ['api.yaml', 'worker.yaml', 'voice-agent.yaml', 'temporal-setup-job.yaml']) {
    expect([name, /resources:/.test(readFileSync(path.join(CHART, 'templates', name), 'utf8'))]).toEqual([name, true]);
  }
  for (const component of [values.api, values.worker, values.voiceAgent]) {
    expect(component.resources.requests).toEqual(expect.objectContaining({ cpu: expect.anything(), memory: expect.anything() }));
    expect(component.resources.limits).toEqual(expect.objectContaining({ memory: expect.anything() }));
  }
  for (const kind of ['PodDisruptionBudget', 'HorizontalPodAutoscaler', 'ScaledObject']) {
    expect(filesUnder(path.join(CHART, 'templates')).some((f) => readFileSync(f, 'utf8').includes(`kind: ${kind}`))).toBe(true);
  }
});

it('sizes the worker from the measured memory per cached session', () => {
  // docs/operations.md: about 550 MB + 0.5 MB per cached session, plus a 0.6 GB band for RSS.
  const mib = (quantity: unknown) => Number(String(quantity).replace(/Mi$/, '')) * (String(quantity).endsWith('Gi') ? 1024 : 1);
  const needed = ((550 + 0.5 * values.worker.maxCachedWorkflows) * 1e6) / 2 ** 20;
  expect(mib(values.worker.resources.requests.memory)).toBeGreaterThanOrEqual(needed);
  expect(mib(values.worker.resources.limits.memory)).toBeGreaterThanOrEqual(needed + (0.6e9 / 2 ** 20) * 0.9);
});

it('lets a stopping process finish its work before it is killed', () => {
  const graceSeconds = values.shutdownGraceMs / 1000;
  for (const name of ['api.yaml', 'worker.yaml', 'voice-agent.yaml']) {
    const template = readFileSync(path.join(CHART, 'templates', name), 'utf8');
    const extra = Number(/terminationGracePeriodSeconds: \{\{ add \(div \.Values\.shutdownGraceMs 1000\) (\d+) \}\}/.exec(template)?.[1]);
    // SHUTDOWN_GRACE_MS, the process's own 1.5 s exit bound, and (API) the 5 s preStop.
    expect([name, extra >= (name === 'api.yaml' ? 5 + 2 : 2)]).toEqual([name, true]);
    expect(graceSeconds + extra).toBeGreaterThan(graceSeconds);
  }
  const composeGrace = (service: string) => Number(String(compose.services[service]!.stop_grace_period).replace(/s$/, ''));
  expect(composeGrace('api')).toBeGreaterThan(8 + 1.5);
  expect(composeGrace('worker')).toBeGreaterThan(8 + 1.5);
  expect(composeGrace('voice-agent')).toBeGreaterThan(8 + 1.5);
});

const mebibytes = (quantity: unknown) => Number(String(quantity).replace(/(Mi|Gi)$/, '')) * (String(quantity).endsWith('Gi') ? 1024 : 1);

it('runs the voice agent from the common runtime with its own command, sized from its measured memory', () => {
  const dockerfile = read('Dockerfile');
  const voice = dockerfile.slice(dockerfile.indexOf(' AS voice-agent'));
  expect(dockerfile).toMatch(/^FROM runtime AS voice-agent$/m);
  expect(voice).toMatch(/^CMD \["node", "--import", "tsx", "workers\/voice-agent\.ts"\]$/m);
  // The same entry as `npm run voice-worker`.
  const pkg = JSON.parse(readFileSync(path.join(DEPLOY, '../package.json'), 'utf8')) as { scripts: Record<string, string> };
  expect(pkg.scripts['voice-worker']).toBe('node --import tsx workers/voice-agent.ts');
  // docs/performance.md "Real-time voice": peak RSS 444-556 MB at one to eight rooms.
  expect(mebibytes(values.voiceAgent.resources.requests.memory)).toBeGreaterThanOrEqual(556e6 / 2 ** 20);
  expect(mebibytes(values.voiceAgent.resources.limits.memory)).toBeGreaterThan(mebibytes(values.voiceAgent.resources.requests.memory));
  // Four rooms a process kept the latency flat there; the default (8) did not.
  expect(values.voiceAgent.maxRooms).toBeLessThanOrEqual(4);
});

it('probes the voice agent, scales it on the voice task queue, and keeps one through a drain', () => {
  const template = readFileSync(path.join(CHART, 'templates/voice-agent.yaml'), 'utf8');
  expect(template).toMatch(/livenessProbe:\s+tcpSocket:\s+port: metrics/);
  expect(template).toMatch(/readinessProbe:\s+tcpSocket:\s+port: bridge/);
  expect(template).toMatch(/name: WORKER_METRICS_PORT/);
  // lib/config.ts voiceTaskQueue: VOICE_TASK_QUEUE, else <TEMPORAL_TASK_QUEUE>-voice.
  expect(template).toContain('taskQueue: {{ default (printf "%s-voice" $.Values.temporal.taskQueue) $va.taskQueue | quote }}');
  expect(template).toMatch(/kind: PodDisruptionBudget/);
  expect(template).toMatch(/kind: ScaledObject/);
  // Speech providers only for the voice agent: the API and the worker would refuse a vendor without its key.
  expect(readFileSync(path.join(CHART, 'templates/configmap.yaml'), 'utf8')).not.toMatch(/VOICE_(STT|TTS)_PROVIDER/);
  const voice = compose.services['voice-agent']!;
  expect(voice.profiles).toEqual(['voice']);
  expect(compose.services.livekit!.profiles).toEqual(['livekit']);
  expect(String(compose.services.livekit!.image)).toMatch(/^livekit\/livekit-server:v\d/);
  const shared = read('compose.yaml').slice(0, read('compose.yaml').indexOf('\nservices:'));
  expect(shared).toMatch(/LIVEKIT_URL: \$\{LIVEKIT_URL:-\}/);
  expect(shared).not.toMatch(/VOICE_(STT|TTS)_PROVIDER/);
  expect(voice.environment).toMatchObject({ VOICE_STT_PROVIDER: expect.stringContaining('openai'), VOICE_BRIDGE_PORT: '3012' });
});

it('keeps secrets out of the compose file: every one comes from .env', () => {
  const text = read('compose.yaml');
  for (const name of ['JWT_SECRET', 'ENCRYPTION_KEYS', 'PLATFORM_ADMIN_TOKEN', 'MONGO_ROOT_PASSWORD', 'MONGO_APP_PASSWORD', 'TEMPORAL_DB_PASSWORD']) {
    expect(text).toContain(`\${${name}:?set in .env}`);
    expect(read('.env.example')).toMatch(new RegExp(`^${name}=`, 'm'));
  }
});
