// The floor of the stream endpoint's own design: an Express app with the JSON body parser that
// streams one completion through the provider layer (the official SDK) with the API's SSE writer,
// and checks, looks up and records nothing. The stream bench runs it in its own process, as it
// runs the API, so what the API adds above it is its own work: authentication, validation, the
// rate limits, the lookups and the usage ledger.
import express from 'express';
import { createLlmProvider } from '../../providers/llm';
import { SseWriter } from '../../api/http/sse';
import { type ChatMessage } from '../../providers/llm/types';

const provider = createLlmProvider({ provider: 'openai', apiKey: 'sk-bench', baseURL: process.env.UPSTREAM_URL ?? 'http://127.0.0.1:1' });
const app = express();
app.use(express.json());
app.post('/relay', (req, res) => {
  void (async () => {
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    const body = req.body as { messages: ChatMessage[]; modelId: string };
    const sse = new SseWriter(res, 15_000);
    sse.open();
    void sse.send('metadata', { modelId: body.modelId, provider: 'openai' });
    try {
      for await (const event of provider.stream({ model: body.modelId, messages: body.messages, signal: controller.signal })) {
        if (event.type === 'finish') continue;
        const { type, ...data } = event;
        await sse.send(type, data);
      }
    } catch (err) {
      await sse.send('error', { error: String(err) });
    }
    sse.end();
  })();
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`);
});
