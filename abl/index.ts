// Public API of the ABL front end: parse, compile and validate projects; pure runtime helpers
// (expressions, templates, gather extraction) and the IR types the workflow interpreter walks.

export { parse, type ParseResult } from './parser';
export { compileProject, validateProject, type CompileOptions, type ProjectFile } from './compile/project';
export {
  DIAGNOSTICS,
  UNSUPPORTED_WARNINGS,
  formatDiagnostic,
  formatDiagnostics,
  type Diagnostic,
  type DiagnosticCode,
  type DiagnosticDef,
  type Severity,
} from './diagnostics';
export { parseExpression, type ExprParseResult } from './expr/parser';
export { evaluate, evaluateCondition, evaluateDetailed, type EvalResult, type Scope } from './expr/evaluate';
export { fixedContext, type EvalContext } from './expr/context';
export { FUNCTIONS } from './expr/functions';
export { truthy, looseEquals, isEmpty, isSet } from './expr/values';
export type { Expr } from './expr/ast';
export { parseTemplate, renderTemplate, type ParsedTemplate, type TemplateNode } from './template';
export { INPUT_KEYWORDS } from './compile/actions';
export { sha256Hex, hashFiles } from './hash';
export * from './ir';
export type * from './ast';

import { compileProject, type CompileOptions, type ProjectFile } from './compile/project';
import type { CompilationOutput } from './ir';

/** Alias of `compileProject`. */
export function compile(files: ReadonlyArray<ProjectFile>, options?: CompileOptions): CompilationOutput {
  return compileProject(files, options);
}
export {
  allFieldsGathered,
  extractGatherValues,
  validateGatherValue,
  type ExtractOptions,
  type GatherExtraction,
  type GatherValidation,
} from './gather';
