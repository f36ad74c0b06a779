// The TTL index on a collection's `expiresAt`, created once per connection. Stores without TTL
// indexes (FerretDB answers NotImplemented) rely on the deletes their reads and writes make instead.
interface TtlIndexed {
  db: object;
  collection: { createIndex(spec: Record<string, 1>, options: { expireAfterSeconds: number; name: string }): Promise<unknown> };
}

const created = new WeakMap<object, Map<string, Promise<void>>>();

export function ensureExpiresAtTtlIndex(model: TtlIndexed & { collection: { collectionName: string } }): Promise<void> {
  let byCollection = created.get(model.db);
  if (!byCollection) created.set(model.db, (byCollection = new Map()));
  const name = model.collection.collectionName;
  let done = byCollection.get(name);
  if (!done) {
    const forget = byCollection;
    done = model.collection.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, name: 'expiresAt_ttl' }).then(
      () => undefined,
      (err: unknown) => {
        if ((err as { code?: number }).code !== 238 /* NotImplemented */) forget.delete(name);
      },
    );
    byCollection.set(name, done);
  }
  return done;
}
