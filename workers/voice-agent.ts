// Voice agent process entry (`npm run voice-worker`): a Temporal worker on the voice task queue
// (config.voiceTaskQueue) that serves only `attendVoiceRoom`, at most VOICE_AGENT_MAX_ROOMS rooms
// at once. SIGINT/SIGTERM stop it gracefully: no new room is taken, rooms in progress get
// SHUTDOWN_GRACE_MS, then their attempts fail and another voice agent takes them over.
// With VOICE_BRIDGE_PORT it also serves the phone bridge (core/voice/phone-bridge.ts): phone
// calls' Twilio Media Streams, put in their voice rooms beside the rooms this process attends.
// With WORKER_METRICS_PORT it serves /metrics as the worker does (workers/metrics.ts): the
// Temporal SDK's metrics of the voice task queue, and a listener orchestrators probe.
import { NativeConnection, Worker } from '@temporalio/worker';
import { dispose as disposeLiveKit } from '@livekit/rtc-node';
import { Client } from '@temporalio/client';
import { ConfigError, loadConfig, type Config } from '../lib/config';
import { createLogger, type Logger } from '../lib/logger';
import { temporalConnectionSettings } from '../lib/temporal-options';
import { payloadCodecForProcess, switchboardDataConverter } from '../lib/payload-codec';
import { connectMongo } from '../db/connection';
import { createModels } from '../db/models';
import { createVoiceAgentActivities, type VoiceAgentDeps } from '../activities/voice/attend';
import { createVad, speechToTextFromConfig, textToSpeechFromConfig, voiceProviderWarnings } from '../providers/voice';
import type { SpeechToText, TextToSpeech, VoiceActivityDetector } from '../providers/voice/types';
import { startPhoneBridge, type PhoneBridge } from '../core/voice/phone-bridge';
import { startWorkerMetrics } from './metrics';

/** The speech providers a voice agent runs with. */
export interface VoiceProviders {
  speechToText: SpeechToText;
  textToSpeech: TextToSpeech;
  createVad(options?: { speechTimeout?: number }): VoiceActivityDetector;
  sttHints?: readonly string[];
}

/** The providers VOICE_STT_PROVIDER / VOICE_TTS_PROVIDER name (providers/voice/index.ts), loaded before the first room. */
export async function voiceProvidersFromConfig(config: Config, logger?: Logger): Promise<VoiceProviders> {
  for (const warning of voiceProviderWarnings(config)) logger?.warn(warning);
  const speechToText = speechToTextFromConfig(config, { onWarning: (message) => logger?.warn(message) });
  const textToSpeech = textToSpeechFromConfig(config);
  await Promise.all([speechToText.warmUp?.(), textToSpeech.warmUp?.()]);
  return {
    speechToText,
    textToSpeech,
    createVad: (options) => createVad(options ?? {}),
    ...(config.VOICE_STT_HINTS.length > 0 ? { sttHints: config.VOICE_STT_HINTS } : {}),
  };
}

export interface RunVoiceAgentOptions {
  config: Config;
  logger: Logger;
  providers: (config: Config) => Promise<VoiceProviders>;
}

/** Connects to the store and Temporal and serves rooms until the process is told to stop. */
export async function runVoiceAgent({ config, logger, providers: makeProviders }: RunVoiceAgentOptions): Promise<void> {
  const payloadCodec = payloadCodecForProcess(config, logger);
  // Before any Temporal connection: it installs the SDK runtime with its metrics exporter.
  const metrics = await startWorkerMetrics(config, logger);
  const models = createModels(await connectMongo(config.MONGODB_URI, { serverSelectionTimeoutMs: config.MONGODB_SERVER_SELECTION_TIMEOUT_MS }));
  const connection = await NativeConnection.connect(temporalConnectionSettings(config));
  const providers = await makeProviders(config);
  const dataConverter = switchboardDataConverter(payloadCodec);
  const temporalClient = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter });
  const deps: VoiceAgentDeps = { config, models, logger, temporalClient, ...providers };
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.voiceTaskQueue,
    activities: createVoiceAgentActivities(deps),
    dataConverter,
    // Each room holds a live media session: the cap is what one process can decode and speak.
    maxConcurrentActivityTaskExecutions: config.VOICE_AGENT_MAX_ROOMS,
    shutdownGraceTime: config.SHUTDOWN_GRACE_MS,
  });
  const bridge: PhoneBridge | null = config.VOICE_BRIDGE_PORT
    ? await startPhoneBridge({ config, models, logger }, { port: config.VOICE_BRIDGE_PORT, host: config.VOICE_BRIDGE_HOST, maxStreams: config.VOICE_AGENT_MAX_ROOMS })
    : null;
  logger.info({ taskQueue: config.voiceTaskQueue, maxRooms: config.VOICE_AGENT_MAX_ROOMS, phoneBridgePort: bridge?.port ?? null }, 'voice agent started');
  try {
    await worker.run();
  } finally {
    await bridge?.close();
    await Promise.allSettled([providers.speechToText.close?.(), providers.textToSpeech.close?.()]);
    await connection.close();
    await models.connection.close();
    await metrics?.close();
    // LiveKit's native client holds the process open until it is disposed: a stopped voice agent exits.
    await disposeLiveKit();
    logger.info('voice agent stopped');
  }
}

if (require.main === module) {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\nSee docs/configuration.md.\n`);
    process.exit(2);
  }
  runVoiceAgent({ config, logger: createLogger({ level: config.LOG_LEVEL, name: 'voice-agent' }), providers: voiceProvidersFromConfig }).catch((err: unknown) => {
    process.stderr.write(`voice agent failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
