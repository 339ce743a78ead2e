// A server for the http capability's hostile cases, in its own process (the capability's calls
// are synchronous). GET or POST:
//   /gz/N    N MiB of zeros, gzip-compressed, with `content-encoding: gzip`
//   /big/N   a body of exactly N bytes
//   /echo    the request's method, path and headers as JSON, and `seen`: how many requests
//            reached the server before this one
// Prints its port on stdout; stops on SIGTERM.
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';

let seen = 0;
const server = createServer((req, res) => {
  const before = seen++;
  req.resume();
  req.on('end', () => {
    const [, kind, n] = req.url.split('/');
    if (kind === 'gz') {
      const body = gzipSync(Buffer.alloc(Number(n) << 20));
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': body.length, connection: 'close' });
      res.end(body);
    } else if (kind === 'big') {
      res.writeHead(200, { 'content-length': Number(n), connection: 'close' });
      res.end(Buffer.alloc(Number(n), 0x61));
    } else {
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ method: req.method, path: req.url, headers: req.headers, seen: before }));
    }
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
