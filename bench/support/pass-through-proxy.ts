// The floor of any API in front of the upstream: a Node process that forwards each request to
// UPSTREAM_URL over a kept-alive connection and pipes the answer back, checking nothing. The
// stream bench runs it next to the API to show what one extra process hop costs on the machine.
import http from 'node:http';

const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:1');
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
  const forwarded = http.request(
    { host: upstream.hostname, port: upstream.port, path: `${upstream.pathname.replace(/\/$/, '')}${req.url ?? '/'}`, method: req.method, headers: { ...req.headers, host: upstream.host }, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forwarded.on('error', () => res.destroy());
  req.pipe(forwarded);
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`);
});
