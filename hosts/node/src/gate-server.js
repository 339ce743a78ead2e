// A scripted gate for replays and tests, in its own process (the component's HTTP calls are
// synchronous, so the server cannot share the caller's event loop). One reply per request:
// {"status": 200, "body": {...}} | {"status": 429} | {"reset": true} | {"delayMs": N, ...}.
// Prints the port on stdout; stops when the replies run out or on SIGTERM.
import { createServer } from 'node:http';
import { appendFileSync, readFileSync } from 'node:fs';

const replies = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// Optional: append each request (method, path, headers, body) as a JSON line to this file.
const record = process.argv[3];
let next = 0;
const server = createServer((req, res) => {
  const reply = replies[next++];
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (record) {
      appendFileSync(record, `${JSON.stringify({ method: req.method, path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })}\n`);
    }
    if (!reply || reply.reset) {
      res.socket.destroy();
    } else {
      const body = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      setTimeout(() => {
        res.writeHead(reply.status, { 'content-type': 'application/json', connection: 'close' });
        res.end(body);
      }, reply.delayMs || 0);
    }
    if (next >= replies.length) server.close();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
