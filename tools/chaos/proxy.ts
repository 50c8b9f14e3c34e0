/**
 * A TCP proxy (node:net) between one worker and DynamoDB Local that the ledger-unreachable drill
 * switches between passing traffic, resetting every connection (and refusing new ones with a
 * reset), and black-holing it (connections stay open, nothing comes back).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'reset' | 'blackhole';

export class TcpProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; cut: boolean }>();
  private readonly held = new Set<Socket>();
  mode: ProxyMode = 'pass';
  port = 0;
  connections = 0;
  dropped = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  static forEndpoint(endpoint: string): TcpProxy {
    const url = new URL(endpoint);
    return new TcpProxy({ host: url.hostname, port: Number(url.port) });
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async listen(): Promise<string> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    return this.endpoint;
  }

  private accept(client: Socket): void {
    this.connections++;
    client.on('error', () => undefined);
    if (this.mode === 'reset') {
      this.dropped++;
      client.resetAndDestroy();
      return;
    }
    if (this.mode === 'blackhole') {
      this.held.add(client);
      client.pause();
      client.once('close', () => this.held.delete(client));
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    const pair = { client, upstream, cut: false };
    this.pairs.add(pair);
    upstream.on('error', () => undefined);
    client.on('close', () => {
      upstream.destroy();
      this.pairs.delete(pair);
    });
    // A black-holed pair stays open on the client side even when DynamoDB closes its end.
    upstream.on('close', () => (pair.cut ? undefined : client.destroy()));
    client.pipe(upstream);
    upstream.pipe(client);
  }

  setMode(mode: ProxyMode): void {
    const previous = this.mode;
    this.mode = mode;
    if (mode === 'reset') {
      for (const pair of this.pairs) {
        this.dropped++;
        pair.cut = true;
        pair.upstream.destroy();
        pair.client.resetAndDestroy();
      }
      this.pairs.clear();
    } else if (mode === 'blackhole') {
      // Existing connections stop forwarding in both directions: requests hang.
      for (const pair of this.pairs) {
        this.dropped++;
        pair.cut = true;
        pair.client.unpipe(pair.upstream);
        pair.upstream.unpipe(pair.client);
        pair.client.pause();
        this.held.add(pair.client);
        pair.client.once('close', () => this.held.delete(pair.client));
        pair.upstream.destroy();
      }
      this.pairs.clear();
    } else if (previous !== 'pass') {
      // Back to normal: whatever hung is cut, so the clients retry on fresh connections.
      for (const socket of this.held) socket.resetAndDestroy();
      this.held.clear();
    }
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) {
      pair.upstream.destroy();
      pair.client.destroy();
    }
    for (const socket of this.held) socket.destroy();
    this.pairs.clear();
    this.held.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
