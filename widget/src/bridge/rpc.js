// A JSON-RPC 2.0 peer over any message channel: the few lines of MCP Apps transport the
// widget needs, instead of the official App class (about 600 KB).
//
// It does not know about windows: `send` posts one message, `receive` takes one. That keeps
// it testable with plain objects; the MCP Apps adapter binds it to window.parent.

export const METHOD_NOT_FOUND = -32601;
export const INTERNAL_ERROR = -32603;

/** An Error for a JSON-RPC error object, keeping its code and data. */
export class RpcError extends Error {
  constructor({ code, message, data } = {}) {
    super(typeof message === "string" && message ? message : "The host returned an error");
    this.name = "RpcError";
    this.code = code;
    this.data = data;
  }
}

/**
 * @param {object} options
 * @param {(message: object) => void} options.send posts one JSON-RPC message
 * @param {(method: string, params: any) => any} [options.onRequest] answers a request (may be
 *   async); throw an RpcError to answer with an error, return `undefined` for "method not found"
 * @param {(method: string, params: any) => void} [options.onNotification]
 * @param {{setTimeout: Function, clearTimeout: Function}} [options.timers]
 */
export function createRpcPeer({ send, onRequest = () => undefined, onNotification = () => {}, timers = globalThis }) {
  let nextId = 1;
  const pending = new Map();

  function settle(id, settleWith) {
    const entry = pending.get(id);
    if (!entry) return;
    pending.delete(id);
    if (entry.timer !== null) timers.clearTimeout(entry.timer);
    settleWith(entry);
  }

  async function answer(message) {
    const { id, method, params } = message;
    try {
      const result = await onRequest(method, params);
      if (result === undefined) {
        send({ jsonrpc: "2.0", id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${method}` } });
      } else {
        send({ jsonrpc: "2.0", id, result });
      }
    } catch (error) {
      const code = error instanceof RpcError && Number.isInteger(error.code) ? error.code : INTERNAL_ERROR;
      send({ jsonrpc: "2.0", id, error: { code, message: String(error?.message ?? error) } });
    }
  }

  return {
    /**
     * Sends a request; resolves with its result, rejects with an RpcError for an error answer
     * or when `timeoutMs` passes without one.
     */
    request(method, params, { timeoutMs } = {}) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer =
          timeoutMs > 0
            ? timers.setTimeout(
                () => settle(id, () => reject(new RpcError({ code: -32001, message: `${method} timed out` }))),
                timeoutMs,
              )
            : null;
        pending.set(id, { resolve, reject, timer });
        send({ jsonrpc: "2.0", id, method, params });
      });
    },

    notify(method, params) {
      send(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params });
    },

    /** Takes one incoming message; anything that is not JSON-RPC 2.0 is ignored. */
    receive(message) {
      if (typeof message !== "object" || message === null || message.jsonrpc !== "2.0") return;
      const hasId = typeof message.id === "number" || typeof message.id === "string";
      if (typeof message.method === "string") {
        if (hasId) answer(message);
        else onNotification(message.method, message.params);
      } else if (hasId && "error" in message) {
        settle(message.id, (entry) => entry.reject(new RpcError(message.error ?? {})));
      } else if (hasId && "result" in message) {
        settle(message.id, (entry) => entry.resolve(message.result));
      }
    },

    /** Rejects every request still waiting (the widget is going away). */
    close(reason = "The connection to the host was closed") {
      for (const id of [...pending.keys()]) settle(id, (entry) => entry.reject(new RpcError({ message: reason })));
    },

    get pendingCount() {
      return pending.size;
    },
  };
}
