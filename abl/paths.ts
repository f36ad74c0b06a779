// POSIX-style path helpers for project-relative file names (no Node `path` in abl/).

/** Normalizes "a/./b/../c" → "a/c"; strips a leading "./"; keeps leading ".." that cannot be resolved. */
export function normalizePath(p: string): string {
  const parts: string[] = [];
  for (const seg of p.replace(/\\/g, '/').split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..' && parts.length > 0 && parts[parts.length - 1] !== '..') parts.pop();
    else parts.push(seg);
  }
  return parts.join('/');
}

export function dirname(p: string): string {
  const n = normalizePath(p);
  const i = n.lastIndexOf('/');
  return i < 0 ? '' : n.slice(0, i);
}

/** Resolves `target` relative to the directory of `from`. */
export function resolveRelative(from: string, target: string): string {
  if (target.startsWith('/')) return normalizePath(target);
  const dir = dirname(from);
  return normalizePath(dir ? `${dir}/${target}` : target);
}

export function basename(p: string): string {
  const n = normalizePath(p);
  return n.slice(n.lastIndexOf('/') + 1);
}
