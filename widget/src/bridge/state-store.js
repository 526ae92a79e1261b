// Where a widget under MCP Apps keeps its job state across a reload.
//
// Hosts render views in sandboxed frames, where merely reading `window.sessionStorage` may
// throw (an opaque origin) and writing may fail (quota, privacy mode). So every access is
// guarded, sessionStorage is tried before localStorage, and memory is the last resort, which
// at least survives re-renders within one page.

const PREFIX = "giftgenius:job:";

function reachable(getStorage) {
  try {
    const storage = getStorage();
    if (!storage) return null;
    const probe = `${PREFIX}probe`;
    storage.setItem(probe, "1");
    storage.removeItem(probe);
    return storage;
  } catch {
    return null;
  }
}

/**
 * @param {Array<() => Storage|undefined>} storageGetters tried in order, e.g.
 *   `[() => window.sessionStorage, () => window.localStorage]`
 */
export function createStateStore(storageGetters = []) {
  const memory = new Map();
  let storage;

  function backing() {
    if (storage === undefined) {
      storage = null;
      for (const getStorage of storageGetters) {
        storage = reachable(getStorage);
        if (storage) break;
      }
    }
    return storage;
  }

  return {
    /** Saves a job's state under its jobId. */
    save(state) {
      if (typeof state?.jobId !== "string") return;
      const text = JSON.stringify(state);
      memory.set(state.jobId, text);
      try {
        backing()?.setItem(PREFIX + state.jobId, text);
      } catch {
        // Full or forbidden: the copy in memory stands.
      }
    },

    /** The state saved for `jobId`, or null. */
    load(jobId) {
      let text = memory.get(jobId) ?? null;
      try {
        text = backing()?.getItem(PREFIX + jobId) ?? text;
      } catch {
        // Unreadable: use memory.
      }
      if (text === null) return null;
      try {
        const state = JSON.parse(text);
        return state?.jobId === jobId ? state : null;
      } catch {
        return null;
      }
    },

    /** Which backing is in use, for diagnostics: "sessionStorage"-like or "memory". */
    get kind() {
      return backing() ? "storage" : "memory";
    },
  };
}
