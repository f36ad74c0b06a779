// Who may record a voice room: the tenant's own credentials (an API key or a user token allowed to
// start sessions) may ask for it; an embedded widget's SDK token, held by a page's visitor, may not
// (docs/voice.md, "Recording").
import { DomainError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';

/** Whether the room is recorded: `requested` as given, refused (403, nothing made) for an SDK token asking for it. */
export function requireRecordingAllowed(principal: Principal, requested: boolean | undefined): boolean {
  if (!requested) return false;
  if (principal.sdk || principal.kind === 'sdk_token') throw new DomainError('FORBIDDEN', 'An SDK token cannot turn recording on; start recorded voice sessions with an API key');
  return true;
}
