/**
 * A still Streamlit host (Custom Components v2) of a module's `mount(element, data)`, given that
 * `mount` (encoder/web/hosts.py's entry): the head scatter, the token lines, and the lesson's
 * explorers, which open where their payload says and neither write the URL nor report to the
 * session. CCv2 calls the host again with each new `data` for the same element, and calls the
 * function it returned when the element unmounts. A module that speaks the page's language (its
 * handle's `relabel`: its data carries no words) says its words again when the page's language
 * changes (shared.js's SPEECH_EVENT), its data unchanged and not sent again.
 */
import { SPEECH_EVENT } from "../shared.js";

export default function stillHost(mount) {
  const HOSTED = new WeakMap();
  return function streamlitHost(component) {
    const { data, parentElement } = component;
    let hosted = HOSTED.get(parentElement);
    if (hosted) {
      hosted.drawn.update(data);
    } else {
      const drawn = mount(parentElement, data);
      hosted = { drawn, relabel: () => drawn.relabel && drawn.relabel() };
      window.addEventListener(SPEECH_EVENT, hosted.relabel);
      HOSTED.set(parentElement, hosted);
    }
    return () => {
      window.removeEventListener(SPEECH_EVENT, hosted.relabel);
      hosted.drawn.destroy();
      HOSTED.delete(parentElement);
    };
  };
}
