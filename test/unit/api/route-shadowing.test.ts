// No `:param` route may swallow a literal path: every literal segment that sits where another
// route has a parameter is one of that parameter's reserved values, and the spec's literal
// sub-paths of `sessions/` are reserved on every `sessions/:id` route before their routes exist.
import { featureRoutes } from '../../../api/app';
import { pathPattern, type AnyRoute } from '../../../api/http/route';
import { RESERVED_SESSION_SUBPATHS } from '../../../api/sessions/schemas';

const routes: AnyRoute[] = featureRoutes.flat();
const segments = (path: string) => path.split('/').filter(Boolean);
const paramName = (segment: string) => (segment.startsWith(':') ? segment.slice(1) : null);

/** Where `param` (a route with a parameter at `index`) would also match `literal`'s path. */
function shadows(param: AnyRoute, literal: AnyRoute, index: number): boolean {
  const p = segments(param.path);
  const l = segments(literal.path);
  if (p.length !== l.length || param.method !== literal.method) return false;
  return p.every((segment, i) => i === index || paramName(segment) !== null || segment.toLowerCase() === l[i]!.toLowerCase());
}

describe('route table', () => {
  it('reserves every literal segment that a parameter route would otherwise match', () => {
    const unreserved: string[] = [];
    for (const param of routes) {
      segments(param.path).forEach((segment, index) => {
        const name = paramName(segment);
        if (!name) return;
        for (const literal of routes) {
          const value = segments(literal.path)[index];
          if (literal === param || !value || paramName(value) !== null || !shadows(param, literal, index)) continue;
          if (!(param.reservedParams?.[name] ?? []).includes(value)) unreserved.push(`${param.method} ${param.path} swallows ${literal.path}`);
        }
      });
    }
    expect(unreserved).toEqual([]);
  });

  it('reserves the spec\'s literal sessions sub-paths on every sessions/:id route', () => {
    const sessionIdRoutes = routes.filter((r) => r.path.startsWith('/api/projects/:projectId/sessions/:id'));
    expect(sessionIdRoutes.length).toBeGreaterThanOrEqual(6);
    expect([...RESERVED_SESSION_SUBPATHS].sort()).toEqual(['export', 'generations']);
    for (const route of sessionIdRoutes) {
      expect({ route: `${route.method} ${route.path}`, reserved: route.reservedParams?.id }).toEqual({
        route: `${route.method} ${route.path}`,
        reserved: RESERVED_SESSION_SUBPATHS,
      });
    }
  });
});

describe('pathPattern', () => {
  const route = { path: '/api/projects/:projectId/sessions/:id/reset', reservedParams: { id: ['export'] } };

  it('matches ids but not a reserved value, in any letter case', () => {
    const pattern = pathPattern(route);
    expect(pattern.test('/api/projects/p1/sessions/abc/reset')).toBe(true);
    expect(pattern.test('/api/projects/p1/sessions/exported/reset')).toBe(true);
    expect(pattern.test('/api/projects/p1/sessions/export/reset')).toBe(false);
    expect(pattern.test('/api/projects/p1/sessions/EXPORT/reset')).toBe(false);
  });

  it('reserves nothing for a route without reserved values', () => {
    expect(pathPattern({ path: '/api/v1/sessions/:id/transcripts' }).test('/api/v1/sessions/export/transcripts')).toBe(true);
  });
});
