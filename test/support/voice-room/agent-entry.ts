// A voice agent process for tests: the product's entry (workers/voice-agent.ts runVoiceAgent) with
// the test stand-ins as its speech parts; the phrases the recogniser stand-in knows come in
// VOICE_TEST_PHRASES (JSON, ScriptedPhrase[]).
import { loadConfig } from '../../../lib/config';
import { createLogger } from '../../../lib/logger';
import { runVoiceAgent } from '../../../workers/voice-agent';
import { energyVad, espeakTts, scriptedStt, type ScriptedPhrase } from './standins';

const config = loadConfig(process.env);
const phrases = JSON.parse(process.env.VOICE_TEST_PHRASES ?? '[]') as ScriptedPhrase[];
runVoiceAgent({
  config,
  logger: createLogger({ level: config.LOG_LEVEL, name: 'voice-agent' }),
  providers: () => Promise.resolve({ speechToText: scriptedStt(phrases), textToSpeech: espeakTts(), createVad: () => energyVad() }),
}).catch((err: unknown) => {
  process.stderr.write(`voice agent failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
