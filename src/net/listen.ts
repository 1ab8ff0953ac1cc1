import type { Server } from 'node:net';

/** Binds `server` to host:port; rejects with the bind error (EADDRINUSE, EACCES, ...). */
export function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
}
