// Type-checked by `npm run typecheck` (tsc --noEmit): how a TypeScript user calls the producer.
import { Client, JobError, type EnqueueOptions } from '../src/index.js';

async function example(): Promise<string[]> {
  const client = await Client.connect({ url: 'redis://127.0.0.1:6379', tenantPrefix: 'tenant-' });
  const options: EnqueueOptions = { queue: 'emails', delay: 30, maxTries: 3, kwargs: { lang: 'pt' } };
  const id: string = await client.enqueue('emails.send', ['ana@example.com', { n: 1 }], options);
  const ids: string[] = await client.enqueueChunked('imports.rows', [1, 2, 3], { chunkSize: 2, tenant: 'acme' });
  try {
    await client.enqueue('sync', [], { tenant: 'bad id' });
  } catch (error) {
    if (error instanceof JobError) console.log(error.code);
  }
  await client.close();
  return [id, ...ids];
}
void example;
