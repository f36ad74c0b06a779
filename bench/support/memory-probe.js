// Preloaded into the bench's worker process (`--require`, with `--expose-gc`) by bench/callbacks.ts
// `--memory-probe`: on SIGWINCH every thread (the main one, the SDK's workflow thread, tsx's loader)
// runs a full GC and appends its V8 heap figures to MEMORY_PROBE_FILE, so RSS can be split into
// live JS heap, the pages V8 keeps for it, and the rest (the SDK's native core, buffers, malloc).
// Not SIGUSR2: it is one of the Temporal runtime's shutdown signals.
'use strict';
const { BroadcastChannel, isMainThread, threadId } = require('node:worker_threads');
const v8 = require('node:v8');
const fs = require('node:fs');

const file = process.env.MEMORY_PROBE_FILE;
if (file) {
  const channel = new BroadcastChannel('switchboard-memory-probe');
  channel.unref();
  const report = (tag) => {
    if (typeof globalThis.gc === 'function') globalThis.gc();
    const heap = v8.getHeapStatistics();
    const mem = process.memoryUsage();
    const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]));
    fs.appendFileSync(
      file,
      `${JSON.stringify({
        tag,
        threadId,
        main: isMainThread,
        heapUsed: heap.used_heap_size,
        heapTotal: heap.total_heap_size,
        heapPhysical: heap.total_physical_size,
        malloced: heap.malloced_memory,
        external: heap.external_memory,
        nativeContexts: heap.number_of_native_contexts,
        detachedContexts: heap.number_of_detached_contexts,
        rss: mem.rss,
        arrayBuffers: mem.arrayBuffers,
        spaces,
      })}\n`,
    );
  };
  channel.onmessage = (event) => report(event.data);
  if (isMainThread) {
    // A channel does not hear its own messages: a second one tells every thread, this one included.
    const sender = new BroadcastChannel('switchboard-memory-probe');
    sender.unref();
    process.on('SIGWINCH', () => sender.postMessage(String(Date.now())));
  }
}
