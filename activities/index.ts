// Activity factory: side effects grouped by concern, built from injected dependencies so tests
// pass real or fake parts without module mocking. Workflows import only its type.
import { type Logger } from '../lib/logger';
import { type Models } from '../db/models';

export interface ActivityDeps {
  models: Models;
  logger: Logger;
}

export function createActivities(_deps: ActivityDeps) {
  return {};
}

export type Activities = ReturnType<typeof createActivities>;
