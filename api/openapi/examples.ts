// Example response bodies for the OpenAPI document, built from the response schemas themselves,
// so every operation in /docs shows the shape it answers with and no example can drift from it.
// A schema's own `example` or `default` wins; otherwise a value follows its type and field name.

type JsonSchema = Record<string, unknown>;

const SAMPLE_ID = 'jqmvff06cp7cvm69y75r2r1x';
const SAMPLE_TIME = '2026-01-31T12:00:00.000Z';

function sampleString(key: string, schema: JsonSchema): string {
  if (schema.format === 'date-time' || /At$/.test(key) || key === 'timestamp') return SAMPLE_TIME;
  if (schema.format === 'email' || key === 'email') return 'ada@example.com';
  if (key === 'sessionId' || (key === 'id' && typeof schema.description === 'string' && /uuid/i.test(schema.description))) {
    return '8f4e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b';
  }
  if (key === 'id' || /Id$/.test(key)) return SAMPLE_ID;
  if (/version$/i.test(key)) return '1.0.0';
  if (/name$/i.test(key)) return 'Billing_Agent';
  return 'string';
}

function resolveRef(ref: string, components: JsonSchema): JsonSchema | undefined {
  const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
  const schemas = components.schemas as Record<string, JsonSchema> | undefined;
  return name ? schemas?.[name] : undefined;
}

/** A value that fits `schema`, as a person would write it in a reference. */
export function exampleFromSchema(schema: JsonSchema | undefined, components: JsonSchema, key = '', depth = 0): unknown {
  if (!schema || depth > 8) return null;
  if (typeof schema.$ref === 'string') return exampleFromSchema(resolveRef(schema.$ref, components), components, key, depth + 1);
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const combinator of ['allOf', 'anyOf', 'oneOf'] as const) {
    const options = schema[combinator] as JsonSchema[] | undefined;
    if (!Array.isArray(options)) continue;
    if (combinator === 'allOf') {
      return Object.assign({}, ...options.map((part) => exampleFromSchema(part, components, key, depth + 1) as object));
    }
    const first = options.find((option) => option.type !== 'null') ?? options[0];
    return exampleFromSchema(first, components, key, depth + 1);
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  const type = types.find((t) => t !== 'null') ?? types[0];
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, exampleFromSchema(property, components, name, depth + 1)]));
    }
    case 'array':
      return [exampleFromSchema(schema.items as JsonSchema | undefined, components, key, depth + 1)];
    case 'string':
      return sampleString(key, schema);
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return {};
  }
}

interface MediaType {
  schema?: JsonSchema;
  example?: unknown;
}

/** Gives every 2xx response of the document an example (in place), unless it has one. */
export function addResponseExamples(document: { paths?: Record<string, unknown>; components?: JsonSchema }): void {
  const components = document.components ?? {};
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item as Record<string, { responses?: Record<string, { content?: Record<string, MediaType> }> }>)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (!status.startsWith('2')) continue;
        for (const media of Object.values(response.content ?? {})) {
          if (media.example === undefined) media.example = exampleFromSchema(media.schema, components);
        }
      }
    }
  }
}
