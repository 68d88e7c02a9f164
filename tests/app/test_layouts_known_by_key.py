"""A keyed set of tabs or expander is known by its key (app.streamlit_private.layouts_known_by_key):
a language switch changes its label, not its identity, so the browser keeps what is inside it
mounted."""

from __future__ import annotations

from streamlit.elements import layouts
from streamlit.testing.v1 import AppTest

from app.streamlit_private import layouts_known_by_key


def _labelled_layouts() -> None:
    import streamlit as st

    word = st.session_state.get("word", "One")
    with st.expander(word, key="box", on_change="rerun"):
        st.write("inside")
    st.tabs([word, "Two"], key="sections", on_change="rerun")


def _ids(at: AppTest) -> tuple[str, str]:
    """The expander's and the set of tabs' identities."""
    box, sections = at.main.children.values()
    return box.proto.id, sections.proto.id


def _ids_before_and_after_relabelling() -> tuple[tuple, tuple]:
    at = AppTest.from_function(_labelled_layouts)
    before = _ids(at.run())
    at.session_state["word"] = "Uno"
    after = _ids(at.run())
    assert not at.exception
    return before, after


def test_a_keyed_expander_and_tabs_keep_their_identity_when_their_labels_change() -> None:
    layouts_known_by_key()  # as app/main.py does, once per process
    before, after = _ids_before_and_after_relabelling()
    assert all(before)
    assert after == before


def test_without_it_streamlit_knows_them_by_their_labels(monkeypatch) -> None:
    # what the patch changes: if a Streamlit release keys these by their key itself, this fails
    # and app.streamlit_private.layouts_known_by_key can go
    layouts_known_by_key()  # whether or not a test before this one had it done
    own = layouts.compute_and_register_element_id.streamlits_own
    monkeypatch.setattr(layouts, "compute_and_register_element_id", own)
    (box, sections), (box_after, sections_after) = _ids_before_and_after_relabelling()
    assert box_after != box
    assert sections_after != sections
