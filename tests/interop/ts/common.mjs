// What both official TypeScript clients do against GiftGenius, and how a run reports it.
//
// Each script (sdk-v1.mjs, sdk-v2.mjs) connects its SDK's client, then runs `exercise`
// and follows a bulk job; it prints one JSON summary on stdout, which
// tests/interop/test_ts_sdks.py asserts on. Expected values are never written here: the
// summary carries what the server said, and the test compares it with the server itself.
// Every wait is bounded, and a watchdog ends a run that hangs anyway, so a script always
// exits.

import { parseArgs } from 'node:util';

export const CSV = 'name,department,interests,budget\nAna,Eng,hiking;coffee,40\n';
export const CATALOG_URI = 'giftgenius://catalog';
export const JOB_KINDS = ['created', 'started', 'progress', 'completed', 'failed', 'cancelled'];
export const TERMINAL = new Set(['job.completed', 'job.failed', 'job.cancelled']);
export const REQUEST_TIMEOUT_MS = 30_000;
const RUN_TIMEOUT_MS = 90_000;

/** `--transport stdio|http`, `--era handshake|modern`, `--url` for HTTP, the server command after `--`. */
export function readOptions() {
    const { values, positionals } = parseArgs({
        options: {
            transport: { type: 'string' },
            era: { type: 'string', default: 'handshake' },
            url: { type: 'string' }
        },
        allowPositionals: true
    });
    if (values.transport === 'http' && !values.url) throw new Error('--transport http needs --url');
    if (values.transport === 'stdio' && positionals.length === 0) throw new Error('--transport stdio needs the server command after --');
    if (!['stdio', 'http'].includes(values.transport)) throw new Error(`unknown --transport ${values.transport}`);
    return { transport: values.transport, era: values.era, url: values.url, command: positionals };
}

/** Ends the process if the run is still going after RUN_TIMEOUT_MS (a hang is a failure, not a wait). */
export function watchdog() {
    setTimeout(() => {
        process.stderr.write(`no result after ${RUN_TIMEOUT_MS} ms\n`);
        process.exit(3);
    }, RUN_TIMEOUT_MS).unref();
}

/** Print the summary, close the client, and exit 0; any error on the way exits 1 with it on stderr. */
export async function finish(client, build) {
    try {
        const summary = await build();
        await client.close();
        summary.closed = true;
        process.stdout.write(`${JSON.stringify(summary)}\n`);
        process.exit(0);
    } catch (error) {
        process.stderr.write(`${error?.stack ?? error}\n`);
        await client.close().catch(() => {});
        process.exit(1);
    }
}

/** Every message the server sent, as the transport read it: both SDKs chain a transport's own `onmessage`. */
export function tapWire(transport) {
    const received = [];
    transport.onmessage = message => received.push(message);
    return received;
}

/** The job events a client heard, once each by `eventId`, and a way to wait for the job's end. */
export class JobEventLog {
    constructor() {
        this.events = new Map();
        this.waiters = [];
    }

    add(params) {
        if (!this.events.has(params.eventId)) this.events.set(params.eventId, params);
        for (const wake of this.waiters.splice(0)) wake();
    }

    of(jobId) {
        return [...this.events.values()]
            .filter(event => event.jobId === jobId)
            .sort((a, b) => sequence(a) - sequence(b));
    }

    /** The job's events once its terminal event has arrived, or whatever came within `ms`. */
    async untilEnded(jobId, ms) {
        const deadline = Date.now() + ms;
        while (!this.of(jobId).some(event => TERMINAL.has(event.type)) && Date.now() < deadline) {
            await new Promise(resolve => {
                this.waiters.push(resolve);
                setTimeout(resolve, deadline - Date.now());
            });
        }
        return this.of(jobId);
    }
}

function sequence(event) {
    return Number(event.eventId.slice(event.eventId.lastIndexOf(':') + 1));
}

function text(content) {
    return content.filter(block => block.type === 'text').map(block => block.text).join('\n');
}

/** The four ordinary exchanges: tools, a tool call, the catalog resource, the card prompt. */
export async function exercise(client) {
    const tools = await client.listTools();
    const suggested = await client.callTool({
        name: 'suggest_gifts',
        arguments: { occasion: 'birthday', budget: 40, recipient: 'friend who loves board games', count: 3 }
    });
    const catalog = await client.readResource({ uri: CATALOG_URI });
    const prompt = await client.getPrompt({
        name: 'gift_congrats_style',
        arguments: { recipient_name: 'Marguerite', occasion: 'birthday' }
    });
    const part = catalog.contents[0];
    return {
        tools: tools.tools.map(tool => tool.name),
        suggest: { isError: suggested.isError ?? false, gifts: suggested.structuredContent?.gifts },
        catalog: { uri: part.uri, mimeType: part.mimeType, items: JSON.parse(part.text).items.length },
        prompt: { messages: prompt.messages.length, text: prompt.messages.map(message => message.content.text ?? '').join('\n') }
    };
}

/** Start the bulk job; its id. */
export async function startJob(client) {
    const started = await client.callTool({ name: 'start_bulk_gift_analysis', arguments: { csv: CSV } });
    if (started.isError) throw new Error(`start_bulk_gift_analysis failed: ${text(started.content)}`);
    return started.structuredContent.jobId;
}

/** Poll get_job_status until the job has ended (the road for clients that hold no stream). */
export async function pollJob(client, jobId) {
    const deadline = Date.now() + REQUEST_TIMEOUT_MS;
    for (;;) {
        const status = (await client.callTool({ name: 'get_job_status', arguments: { jobId } })).structuredContent;
        if (status.pollAfterMs === null) return status;
        if (Date.now() > deadline) throw new Error(`job ${jobId} still ${status.status} after ${REQUEST_TIMEOUT_MS} ms`);
        await new Promise(resolve => setTimeout(resolve, status.pollAfterMs));
    }
}

/** The job's result document, read as the resource its completion names. */
export async function readResult(client, uri) {
    const read = await client.readResource({ uri });
    const part = read.contents[0];
    const people = JSON.parse(part.text).people.map(person => ({ name: person.name, gifts: person.gifts.length }));
    return { uri: part.uri, mimeType: part.mimeType, people };
}

/** Follow a job to its end by its events (and by polling, which must agree), then read its result. */
export async function followJob(client, log, jobId) {
    const events = await log.untilEnded(jobId, REQUEST_TIMEOUT_MS);
    const status = await pollJob(client, jobId);
    return {
        jobId,
        events: events.map(event => ({ eventId: event.eventId, type: event.type })),
        status: { status: status.status, resultResourceId: status.resultResourceId, events: status.events.length },
        result: status.resultResourceId ? await readResult(client, status.resultResourceId) : null
    };
}
