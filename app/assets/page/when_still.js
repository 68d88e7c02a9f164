// The page's scripts work once the page has been still for a while, not on every frame of a
// page being drawn: whenStill(callback, quietMs) runs callback once the page's elements have not
// changed for quietMs (and, with resize, once the window has not been resized for as long).
// Work that must follow the page at once and costs little uses whenChanged(callback): at most
// once a frame, at the next frame after the page's elements change.
export function whenStill(callback, quietMs, { resize = false } = {}) {
  let timer = null;
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(callback, quietMs);
  };
  new MutationObserver(soon).observe(document.body, { childList: true, subtree: true });
  if (resize) window.addEventListener("resize", soon);
  soon();
}

export function whenChanged(callback) {
  let frame = 0;
  new MutationObserver(() => {
    if (!frame) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        callback();
      });
    }
  }).observe(document.body, { childList: true, subtree: true });
  callback();
}
