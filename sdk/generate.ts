// Build-time only: writes sdk/schema.d.ts, the client's types, from the OpenAPI document the API
// serves at /openapi.json, built in-process (no server). `npm run sdk:generate` writes it;
// `--out <file>` writes elsewhere. The client at run time imports none of this.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { buildOpenApiDocument } from '../api/app';

/** Where the committed types live. */
export const SCHEMA_PATH = resolve(__dirname, 'schema.d.ts');

/** The text of sdk/schema.d.ts for the API as it is now. */
export async function generateSchemaSource(): Promise<string> {
  // The server URL is not part of the types; a fixed one keeps the output stable.
  const document = buildOpenApiDocument('http://localhost:3000');
  const ast = await openapiTS(JSON.parse(JSON.stringify(document)) as Parameters<typeof openapiTS>[0], { alphabetize: true });
  return `${COMMENT_HEADER}// Generated from the API's OpenAPI document by \`npm run sdk:generate\` (sdk/generate.ts).\n\n${astToString(ast)}`;
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--out');
  const out = at >= 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]!) : SCHEMA_PATH;
  writeFileSync(out, await generateSchemaSource());
  process.stdout.write(`wrote ${out}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
