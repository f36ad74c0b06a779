// Zod schemas of the project function routes (docs/code-tools.md, "Project functions").
import { z } from 'zod';
import '../openapi/registry';
import { ZLimitQuery, ZOffsetQuery } from '../http/schemas';

export const FUNCTION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** The largest code a function holds (a tool's inline `code:` has no tighter rule). */
export const FUNCTION_CODE_MAX = 256 * 1024;

export const ZProjectFunctionParams = z.object({
  projectId: z.string().min(1).max(64).describe('Project id (a CUID)'),
  name: z.string().regex(FUNCTION_NAME_PATTERN, 'must be letters, digits, dots, dashes and underscores (max 64), starting with a letter or digit').describe('The name a lambda tool writes as `function:`'),
});

export const ZListProjectFunctionsQuery = z.object({ limit: ZLimitQuery, offset: ZOffsetQuery });

export const ZPutProjectFunctionRequest = z
  .object({
    description: z.string().max(1000).nullable().optional(),
    runtime: z.enum(['javascript', 'python']),
    code: z.string().min(1).max(FUNCTION_CODE_MAX).describe('Run in the code-tool sandbox with the same calling convention as a sandbox tool\'s code'),
    entrypoint: z.string().regex(/^[A-Za-z_$][A-Za-z0-9_$]{0,99}$/, 'must be a function name').nullable().optional().describe('The function of `code` to call (default: main if defined, else the code as a function body)'),
    memoryMb: z.number().int().min(1).max(4096).optional().describe('Memory limit (default 128; capped by the worker\'s SANDBOX_MAX_MEMORY_MB)'),
  })
  .strict()
  .openapi('PutProjectFunctionRequest');

export const ZProjectFunction = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    runtime: z.enum(['javascript', 'python']),
    code: z.string(),
    entrypoint: z.string().nullable(),
    memoryMb: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('ProjectFunction');

export const ZProjectFunctionResponse = z.object({ success: z.literal(true), function: ZProjectFunction });
export const ZPutProjectFunctionResponse = z.object({ success: z.literal(true), created: z.boolean(), function: ZProjectFunction });
export const ZListProjectFunctionsResponse = z.object({
  success: z.literal(true),
  functions: z.array(ZProjectFunction),
  total: z.number().int().min(0),
  offset: z.number().int().min(0),
  limit: z.number().int().min(1),
});
