// Host events for the widget, kept until someone listens.
//
// A host may speak before the widget has wired its handlers (the openai globals are there at
// load; an MCP host sends tool-input right after the handshake). Events of a kind nobody
// listens to yet are queued and handed to its first listener, so none is lost to a race.

export function createEmitter() {
  const listeners = new Map();
  const queued = new Map();

  return {
    /** Adds a listener; returns a function that removes it. */
    on(name, listener) {
      const list = listeners.get(name) ?? [];
      list.push(listener);
      listeners.set(name, list);
      const waiting = queued.get(name);
      if (waiting) {
        queued.delete(name);
        for (const value of waiting) listener(value);
      }
      return () => {
        const current = listeners.get(name) ?? [];
        listeners.set(
          name,
          current.filter((candidate) => candidate !== listener),
        );
      };
    },
    emit(name, value) {
      const list = listeners.get(name);
      if (!list || list.length === 0) {
        queued.set(name, [...(queued.get(name) ?? []), value]);
        return;
      }
      for (const listener of [...list]) listener(value);
    },
  };
}
