// Telling the host how big the view is, so a flexible frame fits its content.
//
// A ResizeObserver watches the document element; changes are gathered into one report per
// animation frame, and a report goes out only when the rounded size really changed, so a
// host that resizes the frame in answer does not start a loop of identical messages.

/** The size to report for an element's box: whole pixels, rounded up so nothing is cut. */
export function measure(element) {
  const box = element.getBoundingClientRect();
  return { width: Math.ceil(box.width), height: Math.ceil(box.height) };
}

/**
 * @param {object} options
 * @param {Element} options.element what to measure (the document element)
 * @param {(size: {width: number, height: number}) => void} options.report
 * @param {typeof ResizeObserver} [options.ResizeObserver]
 * @param {(callback: Function) => number} [options.requestFrame]
 * @returns {() => void} stops reporting
 */
export function startSizeReporting({
  element,
  report,
  ResizeObserver = globalThis.ResizeObserver,
  requestFrame = (callback) => globalThis.requestAnimationFrame(callback),
}) {
  let last = null;
  let scheduled = false;
  let stopped = false;

  function flush() {
    scheduled = false;
    if (stopped) return;
    const size = measure(element);
    if (last && last.width === size.width && last.height === size.height) return;
    last = size;
    report(size);
  }

  function schedule() {
    if (scheduled || stopped) return;
    scheduled = true;
    requestFrame(flush);
  }

  if (typeof ResizeObserver !== "function") {
    flush(); // one report is better than none
    return () => {
      stopped = true;
    };
  }
  const observer = new ResizeObserver(schedule);
  observer.observe(element);
  schedule();
  return () => {
    stopped = true;
    observer.disconnect();
  };
}
