// Seeds the dev project with the sample agents of examples/ (once the agents feature exists).
import { type Models } from '../db/models';
import { type DevCredentials } from './seed';

/** Returns the names of the agents present in the dev project after seeding. */
export async function seedDevProject(_models: Models, _credentials: DevCredentials): Promise<string[]> {
  return [];
}
