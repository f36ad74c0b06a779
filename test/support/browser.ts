// Headless Chromium for browser tests: Debian's chromium package (the bootstrap installs it with
// apt-get), or CHROMIUM_PATH, driven by playwright-core, which downloads no browser of its own.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'];

export function chromiumPath(): string {
  const found = [process.env.CHROMIUM_PATH, ...CANDIDATES].find((p): p is string => !!p && existsSync(p));
  if (!found) throw new Error(`Chromium is missing (looked for ${CANDIDATES.join(', ')}): run \`node infra/bootstrap.js --test\`, which installs Debian's chromium, or set CHROMIUM_PATH`);
  return found;
}

/** A headless Chromium with a fresh profile that reaches nothing but what a test opens. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
