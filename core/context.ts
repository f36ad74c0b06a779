// What a domain operation needs from its process: configuration, models, Temporal, logger. The
// API's AppContext is one; a worker activity builds one from its dependencies.
import { type Client } from '@temporalio/client';
import { type Config } from '../lib/config';
import { type Logger } from '../lib/logger';
import { type Models } from '../db/models';

export interface CoreContext {
  config: Config;
  models: Models;
  /** The Temporal client (core/temporal.ts's TemporalGateway in the API). */
  temporal: { client(): Promise<Client> };
  logger: Logger;
}
