/**
 * A still Streamlit host (Custom Components v2) of a module's `mount(element, data)`, joined
 * after the module (encoder/web/hosts.py): the head scatter, the token lines, and the lesson's
 * explorers, which open where their payload says and neither write the URL nor report to the
 * session. CCv2 calls the default export again with each new `data` for the same element, and
 * calls the function it returned when the element unmounts.
 */

const HOSTED = new WeakMap();

export default function streamlitHost(component) {
  const { data, parentElement } = component;
  let drawn = HOSTED.get(parentElement);
  if (drawn) {
    drawn.update(data);
  } else {
    drawn = mount(parentElement, data);
    HOSTED.set(parentElement, drawn);
  }
  return () => {
    drawn.destroy();
    HOSTED.delete(parentElement);
  };
}
