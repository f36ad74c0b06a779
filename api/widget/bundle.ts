// Builds the embeddable widget (web/widget/, TypeScript) into the one script GET /sdk/widget.js
// serves: bundled and minified by esbuild on the first request, then kept in memory for the
// process's life with its ETag. No built file is kept in the repository.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

export const WIDGET_DIR = path.resolve(__dirname, '..', '..', 'web');

export interface WidgetBundle {
  code: Buffer;
  /** A strong ETag: the hash of the code. */
  etag: string;
  bytes: number;
  gzipBytes: number;
}

let building: Promise<WidgetBundle> | null = null;

/** The widget's script, built once per process (a failed build is tried again on the next call). */
export function widgetBundle(): Promise<WidgetBundle> {
  building ??= buildWidget().catch((err: unknown) => {
    building = null;
    throw err;
  });
  return building;
}

async function buildWidget(): Promise<WidgetBundle> {
  const result = await build({
    entryPoints: [path.join(WIDGET_DIR, 'widget', 'main.ts')],
    tsconfig: path.join(WIDGET_DIR, 'tsconfig.json'),
    bundle: true,
    minify: true,
    format: 'iife',
    // Browsers of the last few years (ES2020: Chrome 80, Firefox 74, Safari 14).
    target: 'es2020',
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  const code = Buffer.from(result.outputFiles[0]!.contents);
  return { code, etag: `"${createHash('sha256').update(code).digest('base64url').slice(0, 27)}"`, bytes: code.length, gzipBytes: gzipSync(code).length };
}
