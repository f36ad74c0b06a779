// What the widget keeps across page reloads, in the page origin's localStorage: the session, the
// SDK token while it lives, and the end user it was issued to (so a new token can ask to stay it).
// Never the conversation itself: after a reload it is read again from the session's transcript.

export interface SavedState {
  sessionId: string | null;
  token: string | null;
  expiresAt: number;
  endUserId: string | null;
}

const EMPTY: SavedState = { sessionId: null, token: null, expiresAt: 0, endUserId: null };

export class WidgetStore {
  private readonly key: string;

  constructor(apiBase: string, projectId: string, publicKey: string) {
    // One entry per API, project and key: two widgets on a page do not share a session.
    this.key = `switchboard-widget:${apiBase}:${projectId}:${publicKey.slice(0, 11)}`;
  }

  load(): SavedState {
    try {
      const raw = window.localStorage.getItem(this.key);
      if (!raw) return { ...EMPTY };
      const v = JSON.parse(raw) as Partial<SavedState>;
      return {
        sessionId: typeof v.sessionId === 'string' ? v.sessionId : null,
        token: typeof v.token === 'string' ? v.token : null,
        expiresAt: typeof v.expiresAt === 'number' ? v.expiresAt : 0,
        endUserId: typeof v.endUserId === 'string' ? v.endUserId : null,
      };
    } catch {
      // Storage disabled (private mode, a sandboxed frame): the widget works for this page view only.
      return { ...EMPTY };
    }
  }

  save(state: SavedState): void {
    try {
      window.localStorage.setItem(this.key, JSON.stringify(state));
    } catch {
      // As above: nothing kept.
    }
  }
}
