"""What the library says to a reader (encoder.core.said.Said: an architecture refused, a model on
disk that cannot be read, a run too large, a task's description), told on the page in the
reader's language: the catalogue's translation with the values put in, numbers written the
language's way, a sentence said inside another told too; in English, byte for byte the text the
library gave before it said it with Said; in the pseudo-language, wrapped."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from babel.messages.pofile import read_po

from app import i18n, sources
from app.i18n.catalogue import PSEUDO, translations
from app.user_text import literal
from encoder import EncoderConfig
from encoder.inspect.limits import MAX_PARAMETERS, RunTooLarge, check_run
from encoder.io.checkpoints import load_checkpoint
from encoder.tasks.tasks import TASKS
from encoder.train.findings import race_findings
from tests.app.helpers import assert_no_exception, open_page, shown
from tests.encoder.family_checkpoints import HIDDEN, build_checkpoint

ROOT = Path(__file__).resolve().parents[2]
SENTENCE = "The cat sat on the mat."
DIVISIBLE = (
    "d_model={d_model} is not divisible by num_heads={heads}: each head gets d_model / num_heads "
    "dimensions, so num_heads must divide d_model"
)
EVEN = (
    "{name}={width} must be even for positional='sinusoidal' (sine and cosine take one dimension "
    "each)"
)
INVALID = "{path} describes an invalid encoder: {error}"
TOO_LARGE = (
    "This model would have about {count} million parameters ({size} GB of weights); the limit is "
    "{limit} million. Use fewer layers, a smaller d_model or d_ff."
)
IMPOSSIBLE = "This architecture is impossible: {error}"


@pytest.fixture
def speaking():
    """speaking(language): this test's own calls speak `language`."""
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def refusal(**fields) -> ValueError:
    with pytest.raises(ValueError) as caught:
        EncoderConfig(**fields)
    return caught.value


def catalogue(language: str, message: str) -> str:
    translated = translations(language).gettext(message)
    assert translated != message or language == "en", f"{message!r} untranslated in {language}"
    return translated


def test_an_architecture_refused_is_told_in_each_language_with_its_numbers(speaking) -> None:
    error = refusal(d_model=100, num_heads=12)
    speaking("en")  # the English is the library's text as it was
    assert (
        i18n.told(error)
        == str(error)
        == (
            "d_model=100 is not divisible by num_heads=12: each head gets d_model / num_heads "
            "dimensions, so num_heads must divide d_model"
        )
    )
    for language in ("es", "zh", "ar"):
        speaking(language)
        assert i18n.told(error) == catalogue(language, DIVISIBLE).format(d_model=100, heads=12)
    speaking("es")
    assert "d_model=100 no es divisible por num_heads=12" in i18n.told(error)
    rope = refusal(d_model=6, num_heads=2, positional="rope")
    assert "(d_model / num_heads = 3)" in i18n.told(rope) and "par" in i18n.told(rope)
    rate = refusal(dropout=1.5)  # a bare float: the language's decimal point
    assert str(rate) == "dropout=1.5 must be in [0, 1)"
    assert i18n.told(rate) == "dropout=1,5 debe estar en [0, 1)"
    speaking(PSEUDO)
    assert i18n.told(error).startswith("⟦d_model=100 is not divisible by num_heads=12")


def test_a_run_too_large_says_its_gigabytes_the_languages_way(speaking) -> None:
    cfg = EncoderConfig(d_model=1024, num_heads=16, num_layers=24, d_ff=8192)
    with pytest.raises(RunTooLarge) as caught:
        check_run(cfg, 1, 8)
    error, said = caught.value, caught.value.args[0]
    params = said.values  # the English is the f-string's, byte for byte
    speaking("en")
    size = float(params["size"])
    assert f"({size:.1f} GB of weights)" in i18n.told(error)
    assert f"the limit is {MAX_PARAMETERS / 1e6:,.0f} million." in str(error)
    speaking("es")
    spanish = f"{size:.1f}".replace(".", ",")
    assert i18n.told(error) == catalogue("es", TOO_LARGE).format(
        count=params["count"], size=spanish, limit=params["limit"]
    )
    assert f"({spanish} GB de pesos)" in i18n.told(error)


def test_an_impossible_architecture_on_the_page_is_said_in_spanish() -> None:
    at = open_page(lang="es", d_model="7", num_heads="7", positional="sinusoidal")
    assert_no_exception(at)
    (error,) = at.error
    inner = catalogue("es", EVEN).format(name="d_model", width=7)
    assert error.value == catalogue("es", IMPOSSIBLE).format(error=inner)
    assert "d_model=7 debe ser par" in error.value


def test_the_pseudo_language_wraps_the_library_inside_the_pages_sentence() -> None:
    at = open_page(lang=PSEUDO, d_model="7", num_heads="7", positional="sinusoidal")
    assert_no_exception(at)
    (error,) = at.error
    assert error.value.startswith("⟦This architecture is impossible: ⟦d_model=7 must be even")
    at = open_page(lang=PSEUDO, view="Training", d_model="32", num_heads="4", num_layers="1")
    assert_no_exception(at)
    help_text = at.selectbox(key="train_task").help
    for task in TASKS.values():
        assert f"- **{task.name}**: ⟦{task.description}" in help_text


@pytest.fixture
def models(tmp_path: Path, monkeypatch) -> Path:
    """A folder of checkpoints: odd-heads (its config asks for heads that do not divide its
    width) and mpnet-base (a family not read); the Hugging Face cache an empty folder."""
    pytest.importorskip("transformers")
    folder = tmp_path / "models"
    build_checkpoint("bert", folder / "odd-heads", head=False)
    config_path = folder / "odd-heads" / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "num_attention_heads": 5}))
    (folder / "mpnet-base").mkdir()
    (folder / "mpnet-base" / "config.json").write_text(json.dumps({"model_type": "mpnet"}))
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", str(folder))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    sources.found_models.clear()
    yield folder
    sources.found_models.clear()


def test_a_bad_model_directory_is_said_in_chinese(models, speaking) -> None:
    at = open_page(lang="zh", text=SENTENCE)
    assert_no_exception(at)
    at = at.radio(key="source").set_value("disk:odd-heads").run()
    assert_no_exception(at)
    assert at.session_state["source"] == "random"
    (error,) = at.error
    with pytest.raises(ValueError) as caught:
        load_checkpoint(models / "odd-heads")
    path = caught.value.args[0].values["path"]
    inner = catalogue("zh", DIVISIBLE).format(d_model=HIDDEN, heads=5)
    said = catalogue("zh", INVALID).format(path=path, error=inner)
    again = catalogue("zh", "{error}. The weights are random again.")
    assert error.value == again.format(error=literal(said.rstrip(".")))
    assert f"d_model={HIDDEN} 不能被 num_heads=5 整除" in shown(error.value)
    speaking("en")  # in English, the library's text as it was
    assert str(caught.value) == (
        f"{path} describes an invalid encoder: d_model={HIDDEN} is not divisible by num_heads=5: "
        "each head gets d_model / num_heads dimensions, so num_heads must divide d_model"
    )
    # a directory the loaders do not read, listed with why, the reason told inside the sentence
    (listing,) = [shown(c.value) for c in at.caption if "mpnet" in c.value]
    why = catalogue(
        "zh",
        "MPNet's attention adds a learned relative-position bias to every score, which this "
        "model's attention has not",
    )
    said = catalogue("zh", "{path}: {named} is not read: {why}")
    expected = said.format(path="config.json", named="model_type 'mpnet'", why=why)
    assert listing == f"- mpnet-base (mpnet): {expected}"


def test_the_task_descriptions_are_the_librarys_told_in_arabic() -> None:
    at = open_page(lang="ar", view="Training", d_model="32", num_heads="4", num_layers="1")
    assert_no_exception(at)
    help_text = at.selectbox(key="train_task").help
    for task in TASKS.values():
        translated = catalogue("ar", task.description)
        assert f"- **{task.name}**: {translated}" in help_text
    assert "أخرج الرمز السابق" in help_text


RACE_RUN = (
    "{name} reached a training loss of {loss} after {count} step in {seconds} s (held-out "
    "accuracy {accuracy})",
    "{name} reached a training loss of {loss} after {count} steps in {seconds} s (held-out "
    "accuracy {accuracy})",
)


@pytest.mark.parametrize(("count", "form"), [(0, 0), (1, 1), (2, 2), (3, 3), (11, 4), (100, 5)])
def test_a_sentence_that_counts_is_told_in_each_of_arabics_six_forms(speaking, count, form):
    """The race's finding counts its steps (Said.plural): told in Arabic, it takes the catalogue's
    form for the count (zero, one, two, few: 3-10, many: 11-99, other: 100...); in English, the
    singular for 1 only."""
    run = SimpleNamespace(
        final_loss=0.107,
        held_out_accuracy=0.991,
        history=[{"step": i + 1, "loss": 0.107} for i in range(count)],
        seconds=1.5,
        elapsed=[0.5] * count,
    )
    said = race_findings({"BERT-style": run, "ModernBERT-style": run})  # a tie
    english = "after 1 step in" if count == 1 else f"after {count} steps in"
    assert said.count(english) == 2 and said.endswith(": a tie.")
    with (ROOT / "app/i18n/locale/ar/LC_MESSAGES/server.po").open("rb") as po:
        forms = read_po(po, locale="ar")[RACE_RUN].string
    assert len(set(forms)) >= 5  # zero and other alike, the others each its own
    speaking("ar")
    told = i18n.told(said)
    for name in ("BERT-style", "ModernBERT-style"):
        values = dict(name=name, loss="0.107", seconds="1.5", accuracy="99.1%")
        assert forms[form].format(count=count, **values) in told, told
