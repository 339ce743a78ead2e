// The http capability: POST to endpoints the host named, nothing else. The host adds the
// credential from its own environment; the plugin sees status and body. The component calls
// synchronously, so each request runs in a short-lived child process (execFileSync).
import { execFileSync } from 'node:child_process';

const FORBIDDEN = new Set(['authorization', 'proxy-authorization', 'cookie', 'host', 'content-length',
  'transfer-encoding', 'connection', 'x-api-key', 'api-key']);

// The request itself, in a child process: node:http(s) rather than fetch, so the body is the
// server's bytes (fetch would decompress a gzip reply of any size), read with a counter that stops
// at the limit, headers up to 64 KiB as in the Rust host, and one deadline for all of it.
const CHILD = `
const http = require('node:http');
const https = require('node:https');
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  const req = JSON.parse(input);
  // Once; the process ends when the answer is written (a pipe write finishes later).
  let answered = false;
  const done = (out) => {
    if (answered) return;
    answered = true;
    process.stdout.write(JSON.stringify(out), () => process.exit(0));
  };
  setTimeout(() => done({ error: 'timeout' }), req.timeoutMs);
  let url;
  try { url = new URL(req.url); } catch (e) { return done({ error: 'network', message: 'invalid endpoint URL' }); }
  const lib = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : null;
  if (!lib) return done({ error: 'network', message: 'unsupported endpoint URL scheme ' + url.protocol });
  const body = Buffer.from(req.body, 'base64');
  // Given as a list, headers go out exactly as given: the host names the host and the length.
  // Values go out as their UTF-8 bytes, as the Rust and Python hosts send them (Node writes a
  // header string as Latin-1 and refuses characters past U+00FF).
  const utf8 = (value) => Buffer.from(value, 'utf8').toString('latin1');
  const headers = [['host', url.host], ...req.headers.map(([n, v]) => [n, utf8(v)]), ['content-length', String(body.length)]].flat();
  let r;
  try {
    r = lib.request(url, { method: 'POST', headers, maxHeaderSize: 65536, agent: false }, (res) => {
      const chunks = [];
      let n = 0;
      res.on('data', (c) => {
        n += c.length;
        if (n > req.maxBytes) done({ error: 'network', message: 'the response body is larger than the limit of ' + req.maxBytes + ' bytes' });
        chunks.push(c);
      });
      res.on('end', () => done({ status: res.statusCode, body: Buffer.concat(chunks).toString('base64') }));
      res.on('error', (e) => done({ error: 'network', message: String(e && e.message) }));
    });
  } catch (e) {
    return done({ error: 'network', message: String(e && e.message) });
  }
  r.on('error', (e) => done({ error: 'network', message: String(e && e.message) }));
  r.end(body);
});`;

/** `message` without `secret` in it: no library message should hold it, but the plugin never sees it even if one does. */
function scrub(message, secret) {
  const text = String(message);
  return secret ? text.split(secret).join('[credential]') : text;
}

/** The most bytes a response body may have, and what its base64 in the child's answer may take. */
const MAX_RESPONSE_BYTES = 1 << 20;
const MAX_CHILD_OUTPUT = Math.ceil(MAX_RESPONSE_BYTES / 3) * 4 + (64 << 10);

export class HttpCap {
  /** @param {Map<string, Endpoint> | Record<string, Endpoint>} endpoints
   *  Endpoint: {url: string, credentialEnv?: string, authHeader?: string, authPrefix?: string, maxTimeoutMs?: number} */
  constructor(endpoints = {}) {
    // A Map: the plugin names endpoints, and `constructor` must not find Object's.
    this.endpoints = endpoints instanceof Map ? new Map(endpoints) : new Map(Object.entries(endpoints));
  }

  credential(endpoint) {
    if (!endpoint.credentialEnv) return null;
    const value = process.env[endpoint.credentialEnv];
    return value && value.trim() ? value : undefined;
  }

  hasEndpoint(name) {
    return this.endpoints.has(name);
  }

  hasCredential(name) {
    const endpoint = this.endpoints.get(name);
    return Boolean(endpoint) && this.credential(endpoint) !== undefined;
  }

  post(req) {
    const endpoint = this.endpoints.get(req.endpoint);
    if (!endpoint) throw { tag: 'denied' };
    const p = req.path;
    // A plain absolute path under the endpoint's base: no `..` (nor `%2e%2e`, which the URL parser
    // would resolve), no other host, printable ASCII only as in Rust: no space or control, and
    // nothing non-ASCII (`/café`, a BOM), which each host's client would send differently.
    if (!p.startsWith('/') || p.startsWith('//') || p.includes('..') || /%2e/i.test(p) || /[#@\\]|[^\x21-\x7e]/.test(p)) {
      throw { tag: 'denied' };
    }
    const authHeader = (endpoint.authHeader || 'authorization').toLowerCase();
    const headers = []; // pairs, not an object: a header called `__proto__` is only a header
    for (const [name, value] of req.headers) {
      const lower = name.toLowerCase();
      if (FORBIDDEN.has(lower) || lower === authHeader) throw { tag: 'denied' };
      if (!/^[A-Za-z0-9_-]+$/.test(name) || /[\r\n\0]/.test(value)) throw { tag: 'denied' };
      headers.push([name, value]);
    }
    const secret = this.credential(endpoint);
    if (secret === undefined) throw { tag: 'no-credential' };
    if (secret) {
      const value = `${endpoint.authPrefix ?? 'Bearer '}${secret}`;
      // eslint-disable-next-line no-control-regex
      if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) {
        throw { tag: 'network', val: `the credential in ${endpoint.credentialEnv} is not a valid header value (a line break or control character); nothing was sent` };
      }
      headers.push([endpoint.authHeader || 'authorization', value]);
    }
    const timeoutMs = Math.max(1, Math.min(req.timeoutMs, endpoint.maxTimeoutMs || 30000));
    const input = JSON.stringify({ url: endpoint.url.replace(/\/+$/, '') + p, headers, body: Buffer.from(req.body).toString('base64'),
      timeoutMs, maxBytes: MAX_RESPONSE_BYTES });
    let out;
    try {
      out = JSON.parse(execFileSync(process.execPath, ['-e', CHILD],
        { input, timeout: timeoutMs + 5000, encoding: 'utf8', maxBuffer: MAX_CHILD_OUTPUT }));
    } catch (e) {
      throw e && e.code === 'ETIMEDOUT' ? { tag: 'timeout' } : { tag: 'network', val: scrub(e && e.message, secret) };
    }
    if (out.error === 'timeout') throw { tag: 'timeout' };
    if (out.error) throw { tag: 'network', val: scrub(out.message, secret) };
    return { status: out.status, body: new Uint8Array(Buffer.from(out.body, 'base64')) };
  }
}
