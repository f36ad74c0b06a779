// Builds the browser scripts the API serves from web/ (TypeScript): the embeddable widget
// (GET /sdk/widget.js) and its real-time voice half (GET /sdk/voice.js, loaded by the widget only
// when a call starts). Each is bundled and minified by esbuild on its first request, then kept in
// memory for the process's life with its ETag. No built file is kept in the repository.
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

/** The scripts under web/, by the folder of their entry. */
export type BrowserScript = 'widget' | 'voice';

const building = new Map<BrowserScript, Promise<WidgetBundle>>();

/** A script, built once per process (a failed build is tried again on the next call). */
export function widgetBundle(script: BrowserScript = 'widget'): Promise<WidgetBundle> {
  let bundle = building.get(script);
  if (!bundle) {
    bundle = buildScript(script).catch((err: unknown) => {
      building.delete(script);
      throw err;
    });
    building.set(script, bundle);
  }
  return bundle;
}

async function buildScript(script: BrowserScript): Promise<WidgetBundle> {
  const result = await build({
    entryPoints: [path.join(WIDGET_DIR, script, 'main.ts')],
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
