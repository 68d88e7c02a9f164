/**
 * A page host's own code (Custom Components v2): the component's module is not here but in the
 * page, sent once (app/components/page_hosted.py: an unchanged element travels again only as a
 * reference), where it registers its Streamlit glue (glue/streamlit.js or
 * glue/streamlit_explorer.js: streamlitHost) as window.encoderExplorerHosts[HOST] and dispatches
 * the window's "encoder-explorer-hosts" event. This hands each call to it, once it is there, and
 * is all of the component's code that travels with each rerun. encoder/web/hosts.py writes the
 * host's name for HOST.
 */

const HOST = "HOST_NAME";

export default function (component) {
  const registered = () => (window.encoderExplorerHosts || {})[HOST];
  let cleanup = null;
  let gone = false;
  const wait = () => {
    if (!registered()) return;
    window.removeEventListener("encoder-explorer-hosts", wait);
    if (!gone) cleanup = registered()(component);
  };
  window.addEventListener("encoder-explorer-hosts", wait);
  wait(); // at once where the page's copy is there already
  return () => {
    gone = true;
    window.removeEventListener("encoder-explorer-hosts", wait);
    if (cleanup) cleanup();
  };
}
