// Shared zod schemas for envelopes and common parameters. Each check a schema makes is one the
// OpenAPI document can state (bounds, patterns), so a request the document allows is accepted.
import { z } from 'zod';
import '../openapi/registry';

/**
 * A non-negative integer query parameter: digits only (no sign, blank, exponent or hex, which
 * `Number()` would take), within [min, max]. Documented as an integer with those bounds.
 */
export function queryInt(min: number, max: number, fallback: number) {
  return z
    .union([z.number(), z.string().regex(/^[0-9]{1,16}$/, 'must be an integer').transform(Number)])
    .pipe(z.number().int().min(min).max(max))
    .default(fallback)
    .openapi({ type: 'integer', minimum: min, maximum: max, default: fallback });
}

/** The largest `offset` any list takes: the largest integer JSON numbers carry exactly. */
export const MAX_OFFSET = Number.MAX_SAFE_INTEGER;

export const ZLimitQuery = queryInt(1, 200, 50).describe('Page size (max 200)');
export const ZOffsetQuery = queryInt(0, MAX_OFFSET, 0).describe('Items to skip');

/**
 * A string with at least one character that is not white space. Written as a character class
 * (the white space JavaScript's `trim()` removes) so that the document's pattern means the same
 * in every regular-expression dialect a client may use.
 */
export const NOT_BLANK_PATTERN = /[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/;

/**
 * Text that must not be blank, stored trimmed. The bounds and the pattern apply to the text as
 * sent (so the document states them exactly); the spaces around it are then removed.
 */
export function trimmedText(max: number) {
  return z.string().min(1).max(max).regex(NOT_BLANK_PATTERN, 'must not be blank').trim();
}

/** E-mail addresses as the API checks them (zod's rule, stated as the document's pattern). */
export const ZEmail = z.string().max(320).regex(z.regexes.email, 'must be an e-mail address such as ada@example.com');

/** ISO 8601 date and time with a `Z` or `±HH:MM` offset, e.g. `2026-01-31T12:00:00Z`. */
export const ISO_DATETIME_PATTERN =
  /^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,9})?)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$/;
/** ISO 8601 date, e.g. `2026-01-31`. */
export const ISO_DATE_PATTERN = /^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])$/;

/** A date-time the API reads with `new Date()` (a day past the month's end rolls over). */
export const ZDateTime = z.string().regex(ISO_DATETIME_PATTERN, 'must be an ISO 8601 date-time with an offset, e.g. 2026-01-31T12:00:00Z');

export const ZErrorResponseSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.string().describe('Stable machine-readable code, e.g. VALIDATION_ERROR'),
      message: z.string().describe('What went wrong, for people'),
      details: z.record(z.string(), z.unknown()).optional().describe('Structured detail some errors carry, e.g. diagnostics on 422'),
      requestId: z.string().optional().describe('On the public API (`/api/public`, `/api/v2`): the `tr-` request id, for the platform logs'),
    }),
    retryAfterMs: z.number().optional().describe('On 429: milliseconds until a retry may succeed'),
  })
  .openapi('ErrorResponse');

export const ZProjectIdParam = z.object({
  projectId: z.string().min(1).max(64).describe('Project id (a CUID)'),
});

export const ZPaginationQuery = z.object({ limit: ZLimitQuery, offset: ZOffsetQuery });

export const ZSuccessOnly = z.object({ success: z.literal(true) });
