/**
 * The explorer in an offline HTML file, given the explorer's `mount` (encoder/web/hosts.py's
 * entry): mounts an explorer on the element named by each payload's script element (base64
 * text, never run); each opens where its payload's header says.
 */

export default function mountEvery(mount) {
  for (const data of document.querySelectorAll("script[data-explorer-for]")) {
    const bytes = Uint8Array.from(atob(data.textContent.trim()), (c) => c.charCodeAt(0));
    mount(document.getElementById(data.dataset.explorerFor), bytes);
  }
}
