// Connection options for Temporal shared by the API (client) and the worker (native connection).
import { readFileSync } from 'node:fs';
import { type Config } from './config';

export interface TemporalConnectionSettings {
  address: string;
  tls?: { clientCertPair?: { crt: Buffer; key: Buffer } } | boolean;
  apiKey?: string;
}

export function temporalConnectionSettings(config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_TLS' | 'TEMPORAL_API_KEY' | 'TEMPORAL_TLS_CERT_PATH' | 'TEMPORAL_TLS_KEY_PATH'>): TemporalConnectionSettings {
  const settings: TemporalConnectionSettings = { address: config.TEMPORAL_ADDRESS };
  if (config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH) {
    settings.tls = {
      clientCertPair: {
        crt: readFileSync(config.TEMPORAL_TLS_CERT_PATH),
        key: readFileSync(config.TEMPORAL_TLS_KEY_PATH),
      },
    };
  } else if (config.TEMPORAL_TLS || config.TEMPORAL_API_KEY) {
    settings.tls = true;
  }
  if (config.TEMPORAL_API_KEY) settings.apiKey = config.TEMPORAL_API_KEY;
  return settings;
}
