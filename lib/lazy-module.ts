// Loads a heavy dependency the first time it is used rather than when its importer loads, so a
// process that never calls it (an API without telephony, a worker without a given LLM vendor)
// does not pay for loading hundreds of the dependency's modules at start.
export function lazyModule<T>(load: () => T): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= load());
}
