"""The Training view's masked-word task through AppTest: offered with the others, its controls
filled in, trained on the sidebar's architecture, its results said against guessing, its model
kept with its masked-LM head."""

from __future__ import annotations

from app.i18n import told
from app.page.training import MASKED_PRESET
from encoder.core.lm_head import MaskedLMHead
from encoder.train.findings import example_fill, held_out_said
from encoder.train.presets import TRAINING_PRESETS
from tests.app.helpers import assert_no_exception, open_page, train_to_the_end

TINY = {"d_model": "32", "num_heads": "4", "num_layers": "1", "d_ff": "64"}  # the sidebar's


def test_the_masked_task_is_offered_trained_and_said_against_guessing() -> None:
    at = open_page(view="Training", **TINY)
    assert_no_exception(at)
    task = at.selectbox(key="train_task")
    assert "masked" in task.options and "reverse" in task.options
    task.set_value("masked").run()
    preset = TRAINING_PRESETS[MASKED_PRESET]
    assert at.number_input(key="train_seq_len").value == preset.seq_len
    assert at.select_slider(key="train_batch").value == preset.batch_size
    assert at.number_input(key="train_steps").value == preset.steps
    assert at.slider(key="num_layers").value == 1  # the sidebar's architecture stays
    at.number_input(key="train_steps").set_value(30).run()
    at.button(key="train_start").click().run()
    train_to_the_end(at, 60)
    result = at.session_state["_training_lab"].job.results["pre-norm"]
    assert result.config.task == "masked" and len(result.history) == 30
    assert result.config.model.d_model == 32
    table = at.dataframe[0].value
    assert table["sentences with every hidden word right"].tolist() == [
        result.held_out_sequence_accuracy
    ]
    captions = [c.value for c in at.caption]
    said = held_out_said(result)
    assert told(said) in captions and "always answering “the”" in said
    fill = example_fill(result)
    assert told(fill) in [i.value for i in at.info]
    assert fill.startswith("The trained model reads “The big brown bear caught a fish in the")
    (model,) = at.session_state["_session_models"].values()
    assert isinstance(model.task_model.mlm_head, MaskedLMHead)
    assert model.task_model.mlm_head is result.model.head
    # opened in the views: the model reads any words, so the sentence in the text box stays
    at.button(key="train_open_0").click().run()
    assert_no_exception(at)
    assert at.session_state["view"] == "Attention" and not at.error
    model.task_model.check_text(at.text_area(key="text").value)  # (reads: no ValueError)
    assert any("Type [MASK] where a word is hidden" in c.value for c in at.sidebar.caption)
