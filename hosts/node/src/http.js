// The http capability: POST to endpoints the host named, nothing else. The host adds the
// credential from its own environment; the plugin sees status and body. The component calls
// synchronously, so each request runs in a short-lived child process (execFileSync).
import { execFileSync } from 'node:child_process';

const FORBIDDEN = new Set(['authorization', 'proxy-authorization', 'cookie', 'host', 'content-length',
  'transfer-encoding', 'connection', 'x-api-key', 'api-key']);

const CHILD = `
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', async () => {
  const req = JSON.parse(input);
  try {
    const res = await fetch(req.url, { method: 'POST', headers: req.headers, body: Buffer.from(req.body, 'base64'),
      redirect: 'manual', signal: AbortSignal.timeout(req.timeoutMs) });
    const body = Buffer.from(await res.arrayBuffer());
    process.stdout.write(JSON.stringify({ status: res.status, body: body.subarray(0, req.maxBytes).toString('base64') }));
  } catch (e) {
    const timeout = e && (e.name === 'TimeoutError' || e.name === 'AbortError');
    process.stdout.write(JSON.stringify({ error: timeout ? 'timeout' : 'network', message: String(e && e.cause ? e.cause.message || e.cause : e) }));
  }
});`;

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
    // eslint-disable-next-line no-control-regex
    if (!p.startsWith('/') || p.startsWith('//') || p.includes('..') || /[#@\s\\\u0000-\u001f]/.test(p)) throw { tag: 'denied' };
    const headers = []; // pairs, not an object: a header called `__proto__` is only a header
    for (const [name, value] of req.headers) {
      const lower = name.toLowerCase();
      if (FORBIDDEN.has(lower) || lower === (endpoint.authHeader || 'authorization')) throw { tag: 'denied' };
      if (!/^[A-Za-z0-9_-]+$/.test(name) || /[\r\n\0]/.test(value)) throw { tag: 'denied' };
      headers.push([name, value]);
    }
    const secret = this.credential(endpoint);
    if (secret === undefined) throw { tag: 'no-credential' };
    if (secret) headers.push([endpoint.authHeader || 'authorization', `${endpoint.authPrefix ?? 'Bearer '}${secret}`]);
    const timeoutMs = Math.max(1, Math.min(req.timeoutMs, endpoint.maxTimeoutMs || 30000));
    const input = JSON.stringify({ url: endpoint.url.replace(/\/+$/, '') + p, headers, body: Buffer.from(req.body).toString('base64'),
      timeoutMs, maxBytes: 1 << 20 });
    let out;
    try {
      out = JSON.parse(execFileSync(process.execPath, ['-e', CHILD], { input, timeout: timeoutMs + 5000, encoding: 'utf8' }));
    } catch (e) {
      throw e && e.code === 'ETIMEDOUT' ? { tag: 'timeout' } : { tag: 'network', val: String(e && e.message) };
    }
    if (out.error === 'timeout') throw { tag: 'timeout' };
    if (out.error) throw { tag: 'network', val: out.message };
    return { status: out.status, body: new Uint8Array(Buffer.from(out.body, 'base64')) };
  }
}
