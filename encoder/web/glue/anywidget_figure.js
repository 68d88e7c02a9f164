/**
 * A figure module (similarity_matrix.js, lens_grid.js) in a notebook's anywidget, given the
 * module's `mount` (encoder/web/hosts.py's entry): render({model, el}) mounts it on the widget's
 * element from its `data` (JSON, every word already in the reader's language) and follows new
 * data. Nothing is reported back: a depth or a cell is chosen in the browser alone.
 */

export default (mount) => ({
  render({ model, el }) {
    const view = mount(el, model.get("data"));
    const follow = () => view.update(model.get("data"));
    model.on("change:data", follow);
    return () => {
      model.off("change:data", follow);
      view.destroy();
    };
  },
});
