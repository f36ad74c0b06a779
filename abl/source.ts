// A named piece of ABL text: the input to the lexer, and what code frames are cut from.

/** A file's text plus its project-relative path (used in every diagnostic). */
export interface Source {
  readonly path: string;
  readonly body: string;
}

export function createSource(body: string, path: string): Source {
  return { path, body };
}

/** Hostile-input caps for the front end. */
export const LIMITS = {
  /** Bytes of one file. */
  maxFileLength: 2_000_000,
  /** Logical lines of one file. */
  maxLines: 100_000,
  /** Block nesting depth. */
  maxDepth: 64,
  /** Tokens in one expression. */
  maxExpressionTokens: 2_000,
  /** Expression nesting (parentheses, calls, unary chains). */
  maxExpressionDepth: 32,
  /** Files in one project. */
  maxFiles: 2_000,
} as const;
