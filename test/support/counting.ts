/** Counts the commands a client sends, by command name (SDK middleware, not estimates). */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export class CountingMiddleware {
  private counts = new Map<string, number>();

  attach(client: Pick<DynamoDBDocumentClient, 'middlewareStack'>): void {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? 'unknown';
        this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
        return next(args);
      },
      { step: 'initialize', name: `counting-${Math.random()}` },
    );
  }

  reset(): void {
    this.counts = new Map();
  }

  byCommand(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort());
  }
}
