/**
 * The explorer's anywidget host, given the explorer's `mount` (encoder/web/hosts.py's entry):
 * render({model, el}) mounts it once, follows new payloads, and reports the settled selection
 * as the widget's `layer` and `head`.
 */

export default (mount) => ({
  render({ model, el }) {
    const view = mount(el, model.get("payload"), {
      selection: { layer: model.get("layer"), head: model.get("head") },
      onSelect: ({ layer, head }) => {
        model.set("layer", layer);
        model.set("head", head);
        model.save_changes();
      },
    });
    const follow = () => view.update(model.get("payload"));
    model.on("change:payload", follow);
    return () => {
      model.off("change:payload", follow);
      view.destroy();
    };
  },
});
