// A mock service for an async tool (docs/getting-started.md), in plain Node with no dependencies.
// It takes every tool call, prints it, acknowledges it with 202, and a moment later posts the
// result given on the command line to the callback URL the call carried, signed with the call's
// callback secret (docs/callbacks.md).
//
//   node examples/getting-started/receiver.mjs PORT 'RESULT-JSON' [DELAY-MS]
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';

const [port = '4010', result = '{"status":"ok"}', delay = '2000'] = process.argv.slice(2);
JSON.parse(result); // a result that is not JSON stops the receiver here, not at the first call

createServer((req, res) => {
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (raw += chunk));
  req.on('end', () => {
    let call = {};
    try {
      call = JSON.parse(raw || '{}');
    } catch {
      // Not JSON: printed as it came, with no callback URL to answer.
    }
    const { callbackUrl, callbackSecret } = call;
    const shown = typeof callbackSecret === 'string' ? raw.replace(callbackSecret, '<callback secret>') : raw;
    console.log(`tool call: ${req.method} ${req.url} ${shown}`);
    res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"accepted"}');
    if (typeof callbackUrl !== 'string' || typeof callbackSecret !== 'string') return;
    setTimeout(() => {
      // Sign exactly the bytes that are sent: HMAC-SHA256 of the body with the callback secret.
      const signature = `sha256=${createHmac('sha256', callbackSecret).update(result).digest('hex')}`;
      fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-callback-signature': signature }, body: result })
        .then(async (answer) => console.log(`callback: ${answer.status} ${await answer.text()}`))
        .catch((err) => console.log(`callback failed: ${err}`));
    }, Number(delay));
  });
}).listen(Number(port), '127.0.0.1', () => console.log(`receiver listening on http://127.0.0.1:${port}`));
