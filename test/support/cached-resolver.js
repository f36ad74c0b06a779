// Jest's module resolver, remembered across the test files a jest worker runs: every file loads the
// same ~1,700 modules in its own registry, and resolving each name again (package.json lookups,
// `exports` maps) cost about a second of CPU per file. Files do not change during a run.
const resolved = new Map();

module.exports = (request, options) => {
  const key = `${options.basedir}\0${request}\0${(options.conditions ?? []).join(',')}`;
  let found = resolved.get(key);
  if (found === undefined) {
    found = options.defaultResolver(request, options);
    resolved.set(key, found);
  }
  return found;
};
