// The v2 TypeScript client (`@modelcontextprotocol/client`) against GiftGenius, in either era.
//
// Handshake (`--era handshake`): job events arrive on the session; the job tool also runs
// as an MCP task (task-augmented tools/call, then tasks/result), which this client's
// 2025-11-25 wire codec knows though it has no helper for it: the requests go through
// `client.request` with the SDK's own schemas of their results.
// 2026-07-28 (`--era modern`): no session, so the client opens `subscriptions/listen` with
// the `io.herald/jobEvents` filter naming the job it started; the stream's notifications
// reach the same handlers. `listen()` reports the honoured filter as this client parses
// it; the acknowledgement as it came off the wire is reported beside it. This client has
// no 2026-07-28 tasks (the Tasks extension), so there it does not try them.

import { Client, StreamableHTTPClientTransport, specTypeSchemas } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';

import {
    CSV,
    JOB_KINDS,
    JobEventLog,
    REQUEST_TIMEOUT_MS,
    exercise,
    finish,
    followJob,
    readOptions,
    readResult,
    startJob,
    tapWire,
    watchdog
} from './common.mjs';

const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
const JOB_EVENT = z.looseObject({ eventId: z.string(), jobId: z.string(), type: z.string() });

watchdog();
const options = readOptions();
const mode = { handshake: 'legacy', modern: 'auto' }[options.era];
if (mode === undefined) throw new Error(`unknown --era ${options.era}`);

const client = new Client({ name: 'herald-interop-v2', version: '1.0.0' }, { versionNegotiation: { mode } });
const log = new JobEventLog();
for (const kind of JOB_KINDS) {
    client.setNotificationHandler(`notifications/job/${kind}`, { params: JOB_EVENT }, params => log.add(params));
}

const transport =
    options.transport === 'stdio'
        ? new StdioClientTransport({ command: options.command[0], args: options.command.slice(1), stderr: 'inherit' })
        : new StreamableHTTPClientTransport(new URL(options.url));
const wire = tapWire(transport);
await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });

/** The job tool as a task: created at once, its tool result from tasks/result once the job ended. */
async function runAsTask() {
    const created = await client.request(
        { method: 'tools/call', params: { name: 'start_bulk_gift_analysis', arguments: { csv: CSV }, task: { ttl: 60_000 } } },
        specTypeSchemas.CreateTaskResult,
        { timeout: REQUEST_TIMEOUT_MS }
    );
    const { taskId } = created.task;
    const result = await client.request({ method: 'tasks/result', params: { taskId } }, specTypeSchemas.CallToolResult, {
        timeout: REQUEST_TIMEOUT_MS
    });
    const outcome = result.structuredContent;
    return {
        created: created.task.status,
        taskId,
        result: { isError: result.isError ?? false, structured: outcome },
        document: outcome?.resultResourceId ? await readResult(client, outcome.resultResourceId) : null
    };
}

await finish(client, async () => {
    const summary = {
        sdk: '@modelcontextprotocol/client',
        protocolVersion: client.getNegotiatedProtocolVersion(),
        server: client.getServerVersion(),
        ...(await exercise(client))
    };
    if (options.era === 'modern') {
        // Start, then listen naming the job: the server sends what it said so far, then the rest.
        const jobId = await startJob(client);
        const filter = { toolsListChanged: true, 'io.herald/jobEvents': { jobIds: [jobId] } };
        const subscription = await client.listen(filter, { timeout: REQUEST_TIMEOUT_MS });
        summary.listen = {
            jobId,
            honoredFilter: subscription.honoredFilter,
            acknowledged: wire.find(message => message.method === ACKNOWLEDGED)?.params.notifications
        };
        summary.job = await followJob(client, log, jobId);
        await subscription.close();
    } else {
        summary.job = await followJob(client, log, await startJob(client));
        summary.tasks = client.getServerCapabilities()?.tasks?.requests?.tools?.call ? await runAsTask() : null;
    }
    return summary;
});
