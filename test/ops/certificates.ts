import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Paths of the files `makeCertificates` writes. */
export type Certificates = Record<'ca' | 'caKey' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey', string>;

/**
 * A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, made with
 * openssl in `dir` as `ca.crt`, `server.crt`/`.key` and `client.crt`/`.key` (the names the README
 * TLS snippet reads).
 */
export function makeCertificates(dir: string): Certificates {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=nrs-test-ca',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
  );
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const [name, ext] of [
    ['server', ['-extfile', file('server.ext')]],
    ['client', []],
  ] as const) {
    openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=nrs-${name}`,
      '-keyout',
      file(`${name}.key`),
      '-out',
      file(`${name}.csr`),
    );
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      file(`${name}.crt`),
      ...ext,
    );
  }
  return {
    ca: file('ca.crt'),
    caKey: file('ca.key'),
    serverCert: file('server.crt'),
    serverKey: file('server.key'),
    clientCert: file('client.crt'),
    clientKey: file('client.key'),
  };
}
