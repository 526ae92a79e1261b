// The v1 TypeScript SDK (`@modelcontextprotocol/sdk`) against GiftGenius, handshake era only:
// v1 speaks no 2026-07-28. Job events arrive on the session (stdio, or the HTTP session's
// GET stream) and reach the handlers registered with a zod schema per method.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';

import { JOB_KINDS, JobEventLog, REQUEST_TIMEOUT_MS, exercise, finish, followJob, readOptions, startJob, tapWire, watchdog } from './common.mjs';

watchdog();
const options = readOptions();
if (options.era !== 'handshake') throw new Error('the v1 SDK speaks the handshake era only');

const client = new Client({ name: 'herald-interop-v1', version: '1.0.0' });
const log = new JobEventLog();
for (const kind of JOB_KINDS) {
    const schema = z.object({ method: z.literal(`notifications/job/${kind}`), params: z.looseObject({ eventId: z.string(), jobId: z.string(), type: z.string() }) });
    client.setNotificationHandler(schema, notification => log.add(notification.params));
}

const transport =
    options.transport === 'stdio'
        ? new StdioClientTransport({ command: options.command[0], args: options.command.slice(1), stderr: 'inherit' })
        : new StreamableHTTPClientTransport(new URL(options.url));
const wire = tapWire(transport);
await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });

await finish(client, async () => {
    const exercised = await exercise(client);
    const jobId = await startJob(client);
    return {
        sdk: '@modelcontextprotocol/sdk',
        protocolVersion: wire.find(message => message.result?.protocolVersion)?.result.protocolVersion,
        server: client.getServerVersion(),
        ...exercised,
        job: await followJob(client, log, jobId)
    };
});
