// The shape of a model price table (USD per 1M tokens) and its parser: configuration validates
// LLM_PRICE_TABLE with it; the prices themselves and the cost estimate are providers/llm/pricing.ts.
import { z } from 'zod';

export const ZModelPriceSchema = z.object({
  inputPerMillion: z.number().nonnegative().describe('USD per 1M input (prompt) tokens'),
  outputPerMillion: z.number().nonnegative().describe('USD per 1M output (completion) tokens'),
});
export type ModelPrice = z.infer<typeof ZModelPriceSchema>;

/** Keyed by model id, bare (`gpt-4o-mini`) or qualified (`openai:gpt-4o-mini`); qualified wins. */
export const ZPriceTableSchema = z.record(z.string().min(1), ZModelPriceSchema);
export type PriceTable = z.infer<typeof ZPriceTableSchema>;

/** Parses a JSON price table (e.g. from an env var or a project setting); throws a ZodError on bad input. */
export function parsePriceTable(json: string): PriceTable {
  return ZPriceTableSchema.parse(JSON.parse(json) as unknown);
}
