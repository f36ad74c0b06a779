// Estimated cost of a call from its token usage and a price table (USD per 1M tokens).
// Unknown models cost `null`, never a guess: tokens are still recorded by the caller.
import { parsePriceTable, type ModelPrice, type PriceTable } from '../../lib/price-table';
import { parseModelId } from './model-resolution';

export { ZModelPriceSchema, ZPriceTableSchema, parsePriceTable, type ModelPrice, type PriceTable } from '../../lib/price-table';

const price = (inputPerMillion: number, outputPerMillion: number): ModelPrice => ({ inputPerMillion, outputPerMillion });

/**
 * List prices at the time of writing, for estimates only. Operators override or extend this
 * with their negotiated prices (see docs/llm-providers.md); a model not listed costs `null`.
 */
export const DEFAULT_PRICE_TABLE: Readonly<PriceTable> = Object.freeze({
  local: price(0, 0),
  'gpt-4o': price(2.5, 10),
  'gpt-4o-mini': price(0.15, 0.6),
  'gpt-4.1': price(2, 8),
  'gpt-4.1-mini': price(0.4, 1.6),
  'gpt-4.1-nano': price(0.1, 0.4),
  'gpt-5': price(1.25, 10),
  'gpt-5-mini': price(0.25, 2),
  'gpt-5-nano': price(0.05, 0.4),
  'o3-mini': price(1.1, 4.4),
  'o4-mini': price(1.1, 4.4),
  'claude-opus-4-1': price(15, 75),
  'claude-opus-4-5': price(5, 25),
  'claude-sonnet-4-5': price(3, 15),
  'claude-sonnet-4': price(3, 15),
  'claude-haiku-4-5': price(1, 5),
  'claude-3-5-haiku': price(0.8, 4),
});

/** The default table with `overrides` applied (an override replaces a model's entry). */
export function mergePriceTable(overrides: PriceTable, base: Readonly<PriceTable> = DEFAULT_PRICE_TABLE): PriceTable {
  return { ...base, ...overrides };
}

/** The built-in prices with LLM_PRICE_TABLE's overrides on top (configuration validated it). */
export function priceTableFromConfig(json: string | undefined): PriceTable {
  return json ? mergePriceTable(parsePriceTable(json)) : { ...DEFAULT_PRICE_TABLE };
}

// Providers report dated snapshots: gpt-4o-mini-2024-07-18, claude-sonnet-4-5-20250929.
const SNAPSHOT_SUFFIX = /-(\d{4}-\d{2}-\d{2}|\d{8})$/;

/** The price for a model id as written in config or as reported by a provider; undefined if unknown. */
export function lookupPrice(model: string, table: Readonly<PriceTable> = DEFAULT_PRICE_TABLE): ModelPrice | undefined {
  const parsed = parseModelId(model);
  const candidates = [model];
  if (parsed) {
    const qualified = `${parsed.provider}:${parsed.model}`;
    candidates.push(qualified, parsed.model);
    const undated = parsed.model.replace(SNAPSHOT_SUFFIX, '');
    if (undated !== parsed.model) candidates.push(`${parsed.provider}:${undated}`, undated);
  } else {
    const undated = model.replace(SNAPSHOT_SUFFIX, '');
    if (undated !== model) candidates.push(undated);
  }
  for (const key of candidates) {
    if (Object.hasOwn(table, key)) return table[key];
  }
  return undefined;
}

/** USD, or null when the model's price is unknown. */
export function estimateCost(
  model: string,
  usage: { inputTokens: number; outputTokens: number },
  table: Readonly<PriceTable> = DEFAULT_PRICE_TABLE,
): number | null {
  const entry = lookupPrice(model, table);
  if (!entry) return null;
  const cost = (usage.inputTokens * entry.inputPerMillion + usage.outputTokens * entry.outputPerMillion) / 1_000_000;
  // Round away float noise (0.1 + 0.2) but keep sub-cent precision for cheap models.
  return Math.round(cost * 1e10) / 1e10;
}
