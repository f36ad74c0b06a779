// Entry of GET /sdk/widget.js: reads the script tag's data attributes and puts the chat widget on
// the page. `<script src="https://api.example.com/sdk/widget.js" data-public-key="pk_…"
// data-project="…"></script>` is all a page needs (docs/widget.md).
import { ChatWidget } from './widget';

declare global {
  interface Window {
    SwitchboardWidget?: { open(): void; close(): void };
  }
}

function mount(script: HTMLScriptElement): void {
  const publicKey = script.dataset.publicKey?.trim();
  const projectId = script.dataset.project?.trim();
  if (!publicKey || !projectId) {
    console.error('Switchboard widget: the script tag needs data-public-key and data-project (docs/widget.md)');
    return;
  }
  // The API that serves the script answers the widget, unless data-api-base names another.
  const apiBase = (script.dataset.apiBase?.trim() || new URL('..', script.src).href).replace(/\/+$/, '');
  const widget = new ChatWidget({
    apiBase,
    publicKey,
    projectId,
    userAssertion: script.dataset.userAssertion?.trim() || null,
    open: script.dataset.open === 'true',
    voiceAudioProcessing: script.dataset.voiceAudioProcessing !== 'false',
  });
  window.SwitchboardWidget = { open: () => widget.open(), close: () => widget.close() };
}

const script = (document.currentScript as HTMLScriptElement | null) ?? document.querySelector<HTMLScriptElement>('script[data-public-key][src*="widget.js"]');
if (window.SwitchboardWidget) {
  // Loaded twice: one widget is enough.
} else if (script) {
  if (document.body) mount(script);
  else document.addEventListener('DOMContentLoaded', () => mount(script), { once: true });
}
