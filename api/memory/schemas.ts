// Zod schemas of POST /api/v1/memory (docs/memory.md, "Memory stores"): the body by action, the
// three answers, and the store name's limits.
import { z } from 'zod';
import '../openapi/registry';
import { MEMORY_STORE_LIMITS, MEMORY_STORE_NAME_PATTERN } from '../../core/memory-stores/stores';

/** Bytes of a request body: a store's content at its limit, escaped as JSON may send it, and the rest. */
export const MEMORY_BODY_BYTES = 2 * MEMORY_STORE_LIMITS.contentBytes;

const ZStoreName = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .min(1)
  .max(MEMORY_STORE_LIMITS.nameChars)
  .regex(MEMORY_STORE_NAME_PATTERN, 'must be letters, digits, _ - . or : (starting with a letter, digit or _)')
  .describe(`The store's name, unique in the session: up to ${MEMORY_STORE_LIMITS.nameChars} letters, digits, \`_\`, \`-\`, \`.\` or \`:\``);

const ZContent = z
  .record(z.string(), z.unknown(), { error: (issue) => (issue.input === undefined ? 'is required for set (a JSON object)' : 'must be a JSON object') })
  .describe(`The object to store (up to ${MEMORY_STORE_LIMITS.contentBytes / 1024} KB as JSON); get answers it as stored`);

const ZReadOrDelete = z
  .object({
    action: z.enum(['get', 'delete']).describe('`get` reads the store, `delete` removes it'),
    memoryStoreName: ZStoreName,
    payload: z.object({ content: ZContent.optional() }).optional().describe('Not used by get and delete'),
  })
  .openapi('MemoryReadOrDeleteRequest');

const ZSet = z
  .object({
    action: z.literal('set').describe('`set` replaces the store’s content (creating the store)'),
    memoryStoreName: ZStoreName,
    payload: z
      .object({ content: ZContent }, { error: (issue) => (issue.input === undefined ? 'is required for set: { "content": { … } }' : 'must be an object') })
      .describe('`content`: the object to store'),
  })
  .openapi('MemorySetRequest');

export const ZMemoryRequest = z
  .discriminatedUnion('action', [ZReadOrDelete, ZSet], {
    error: () => 'is required and must be get, set or delete',
  })
  .openapi('MemoryRequest');

export type MemoryRequest = z.infer<typeof ZMemoryRequest>;

export const ZMemoryResponse = z
  .union([
    z
      .object({
        success: z.literal(true),
        data: z.record(z.string(), z.unknown()).nullable().describe('get: the stored object; null for a store never set (or deleted)'),
      })
      .describe('get'),
    z.object({ success: z.literal(true), data: z.object({ deleted: z.boolean().describe('Whether there was a store to delete') }) }).describe('delete'),
    z.object({ success: z.literal(true) }).describe('set'),
  ])
  .openapi('MemoryResponse', { example: { success: true, data: { cart: ['sku-1'], step: 2 } } });
