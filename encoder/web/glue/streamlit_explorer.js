/**
 * The explorer's Streamlit host (Custom Components v2), given the explorer's `mount`
 * (encoder/web/hosts.py's entry): the component's default export. CCv2 calls it again with each
 * new payload for the same element, and calls the function it returned when the element
 * unmounts.
 *
 * The explorer writes its layer and head into the page's URL at once (history.replaceState, no
 * message) and reports them as the component's `selection` state only once they settle
 * (REPORT_AFTER_MS without another head), so the session follows with one cheap rerun; once
 * its neuron view opens, at once and from then on with `neuron: true`, which asks the page for
 * every head's q and k (the explorer's option `asks`: it offers the view before it has them). Its
 * payload carries no words: it says the page's again when the page's language changes (shared.js's
 * SPEECH_EVENT), the payload unchanged and not sent again.
 */
import { SPEECH_EVENT } from "../shared.js";

const REPORT_AFTER_MS = 1000; // quiet time after the last head change before Python hears of it

function writeUrl(layer, head) {
  const url = new URL(window.location.href);
  url.searchParams.set("layer", String(layer));
  url.searchParams.set("head", String(head));
  window.history.replaceState(window.history.state, "", url);
}

export default function explorerHost(mount) {
  const HOSTED = new WeakMap();
  return function streamlitHost(component) {
    const { data, parentElement, setStateValue } = component;
    let hosted = HOSTED.get(parentElement);
    if (hosted) {
      hosted.explorer.update(data);
    } else {
      const url = new URLSearchParams(window.location.search);
      hosted = { sent: null, timer: null };
      const report = (chosen) => {
        writeUrl(chosen.layer, chosen.head);
        const asking = !hosted.neuron && chosen.mode === "neuron"; // its first opening
        hosted.neuron = hosted.neuron || asking;
        const key = `${chosen.layer},${chosen.head},${hosted.neuron}`;
        clearTimeout(hosted.timer);
        if (key === hosted.sent) return;
        hosted.timer = setTimeout(() => {
          hosted.sent = key;
          setStateValue("selection", { layer: chosen.layer, head: chosen.head,
            neuron: hosted.neuron });
        }, chosen.full && !asking ? REPORT_AFTER_MS : 0);
      };
      hosted.sent = `${Number(url.get("layer")) || 0},${Number(url.get("head")) || 0},false`;
      hosted.explorer = mount(parentElement, data, {
        selection: { layer: url.get("layer"), head: url.get("head") },
        onSelect: report,
        asks: true,
      });
      hosted.relabel = () => hosted.explorer.relabel();
      window.addEventListener(SPEECH_EVENT, hosted.relabel);
      HOSTED.set(parentElement, hosted);
    }
    return () => {
      clearTimeout(hosted.timer);
      window.removeEventListener(SPEECH_EVENT, hosted.relabel);
      hosted.explorer.destroy();
      HOSTED.delete(parentElement);
    };
  };
}
