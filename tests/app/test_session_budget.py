"""Every model in the budget (AppTest): what browser sessions keep (uploads, trained models, a
training in progress) and compare mode's second run count in the server's byte budget; a session
keeps at most ENCODER_EXPLORER_SESSION_BUDGET; a refusal says what it needs and what the limit
is; the models a page shows are never dropped; a session's models leave with it."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import run_cache, runs
from app.controls import session_models, setup_keys
from app.memory import KEPT_SHARE, size_text
from app.views.training import lab as training_lab
from encoder import EncoderConfig
from encoder.core import block
from encoder.inspect.limits import BYTES_PER_VALUE, estimate_activation_bytes
from encoder.io.checkpoint_files import checkpoint_archive, files_from_archive
from encoder.io.task_model import TaskModel
from encoder.tasks.classifier import TokenClassifier
from encoder.tasks.task_tokenizer import task_tokenizer
from encoder.train.config import TrainConfig
from tests.app.helpers import assert_no_exception, open_page, upload

# A random model of MiniLM's vocabulary, 2 MB: the page's own runs take little of the budget
TINY_PAGE = {"d_model": "16", "num_heads": "2", "num_layers": "1", "d_ff": "64"}


class Upload:
    """A task model's checkpoint as a zip (about 6 MB), what the page estimates its model keeps
    before loading it (the weights file and 16 bytes per byte of tokenizer.json), and what it
    keeps once loaded (its tensors, counted here, and its tokenizer)."""

    def __init__(self) -> None:
        cfg = TrainConfig().with_model(d_model=256, num_heads=4, num_layers=2, d_ff=1024)
        classifier = TokenClassifier(cfg.model, cfg.num_classes).eval()
        model = TaskModel(classifier, task_tokenizer(cfg.vocab), cfg.task, cfg.seq_len)
        self.zip = checkpoint_archive(model.files())
        files = files_from_archive(self.zip, "x")
        self.estimate = len(files["model.safetensors"]) + 16 * len(files["tokenizer.json"])
        tensors = [*classifier.parameters(), *classifier.buffers()]
        self.nbytes = sum(t.numel() for t in tensors) * 4 + 16 * len(model.tokenizer.to_str())


@pytest.fixture(scope="module")
def checkpoint() -> Upload:
    return Upload()


@pytest.fixture
def budgets(monkeypatch):
    """set(budget, session budget): the server's and each session's, from a clean cache."""
    gc.collect()  # sessions of earlier tests let go of what they kept
    # the server's first page warms the landing run in the background; let it land, then go
    run_cache.warm_landing(setup_keys.DEFAULTS["text"]).join(timeout=120)
    runs.CACHE.clear()
    assert runs.CACHE.kept() == 0

    def set_budgets(budget: int, session_budget: int) -> None:
        monkeypatch.setattr(runs.CACHE, "budget", budget)
        monkeypatch.setattr(session_models, "SESSION_BUDGET", session_budget)

    return set_budgets


def shelf(at: AppTest) -> session_models.ModelShelf:
    return at.session_state["_session_models"]


def errors(at: AppTest) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]  # shown literally: escaped markdown


def warnings(at: AppTest) -> list[str]:
    return [w.value.replace("\\", "") for w in at.warning]


def check_budget(*sessions: AppTest) -> None:
    """The budget holds, each session within its cap, and each keeps the model it shows."""
    cache = runs.CACHE
    assert cache.used <= cache.budget and cache.kept() <= cache.kept_limit
    for at in sessions:
        assert_no_exception(at)
        assert shelf(at).nbytes <= session_models.SESSION_BUDGET
        source = at.session_state["source"]
        assert source in ("random", "pretrained") or source in shelf(at)


def test_a_session_keeps_its_cap_and_never_drops_the_models_its_setups_show(
    checkpoint: Upload, budgets
) -> None:
    estimate = checkpoint.estimate
    budgets(100_000_000, int(2.5 * estimate))  # room for two models a session
    at = open_page(**TINY_PAGE)
    ids = []
    for _ in range(3):
        upload(at, ("m.zip", checkpoint.zip))
        check_budget(at)
        assert not at.error
        ids.append(at.session_state["source"])
    assert list(shelf(at)) == ids[1:]  # the third made room: the oldest went, not the one shown
    assert shelf(at).nbytes == 2 * checkpoint.nbytes == runs.CACHE.kept()

    # compare mode: A shows the newest model, B the older one; neither may go
    at.toggle(key="compare").set_value(True).run()
    at.radio(key="b_source").set_value(ids[1]).run()
    assert at.session_state["_b_overrides"] == {"source": ids[1]}
    upload(at, ("m.zip", checkpoint.zip))
    check_budget(at)
    assert list(shelf(at)) == ids[1:] and at.session_state["source"] == ids[2]
    cap = session_models.SESSION_BUDGET
    assert errors(at) == [
        f"This upload needs about {size_text(estimate)} of memory; this session keeps "
        f"{size_text(2 * checkpoint.nbytes)} of models ({size_text(2 * checkpoint.nbytes)} of "
        f"them in use or being trained) and may keep at most {size_text(cap)} on this server. "
        "Choose other weights for setups A and B to let their models go."
    ]
    at.toggle(key="compare").set_value(False).run()  # B is not shown: its model may go
    upload(at, ("m.zip", checkpoint.zip))
    check_budget(at)
    assert not at.error and list(shelf(at))[0] == ids[2]


def test_many_sessions_uploading_keep_the_server_within_its_budget(
    checkpoint: Upload, budgets
) -> None:
    estimate, nbytes = checkpoint.estimate, checkpoint.nbytes
    budget = 17 * estimate  # sessions may keep 12.75 estimates: twelve models
    budgets(budget, int(5.5 * estimate))  # five models a session
    kept_limit = int(budget * KEPT_SHARE)
    students = [open_page(**TINY_PAGE) for _ in range(3)]
    for _ in range(4):
        for at in students:
            upload(at, ("m.zip", checkpoint.zip))
            check_budget(*students)
            assert not at.error
    assert runs.CACHE.kept() == 12 * nbytes

    late = open_page(**TINY_PAGE)  # keeps nothing it could let go: refused
    upload(late, ("m.zip", checkpoint.zip))
    check_budget(late, *students)
    assert errors(late) == [
        f"This upload needs about {size_text(estimate)} of memory; the models that browser "
        f"sessions keep may take {size_text(kept_limit)} together on this server (75% of its "
        f"memory limit of {size_text(budget)}), and they take "
        f"{size_text(12 * nbytes)} now (0 MB of them this session's). Try again when other "
        "sessions have ended."
    ]
    assert len(shelf(late)) == 0

    first = students[0]  # within its own cap; the server's share makes it let its oldest go
    before = list(shelf(first))
    upload(first, ("m.zip", checkpoint.zip))
    check_budget(late, *students)
    assert not first.error and list(shelf(first))[:3] == before[1:]
    assert runs.CACHE.kept() == 12 * nbytes

    del students[0], first  # that session ends: its four models leave the budget
    gc.collect()
    assert runs.CACHE.kept() == 8 * nbytes
    upload(late, ("m.zip", checkpoint.zip))
    check_budget(late, *students)
    assert not late.error and runs.CACHE.kept() == 9 * nbytes


def test_a_sessions_models_and_their_runs_leave_with_it(checkpoint: Upload, budgets) -> None:
    budgets(100_000_000, 50_000_000)
    at = open_page(**TINY_PAGE)
    upload(at, ("m.zip", checkpoint.zip))
    model_id = at.session_state["source"]
    assert runs.CACHE.kept() == checkpoint.nbytes
    assert runs.CACHE.tagged(model_id) > checkpoint.nbytes  # the model, and the run drawn of it
    del at
    gc.collect()
    assert runs.CACHE.kept() == 0 and runs.CACHE.tagged(model_id) == 0


def test_the_first_session_of_a_process_leaves_with_its_models_too(
    checkpoint: Upload, tmp_path
) -> None:
    """A fresh process, whose first page keeps an upload, then ends. No page run freezes the heap
    (the server does as it starts, app.heap.frozen_at_start): frozen in the first page run, that
    session's state was never collected, and its models stayed."""
    archive = tmp_path / "m.zip"
    archive.write_bytes(checkpoint.zip)
    script = (
        "import gc\n"
        "from app import runs\n"
        "from tests.app.helpers import open_page, upload\n"
        f"at = open_page(**{TINY_PAGE!r})\n"
        f"upload(at, ('m.zip', open({str(archive)!r}, 'rb').read()))\n"
        "kept = runs.CACHE.kept()\n"
        "del at\n"
        "gc.collect()\n"
        "print('kept', kept, runs.CACHE.kept())\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True)
    kept = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("kept ")]
    assert kept == [[str(checkpoint.nbytes), "0"]], done.stderr[-2000:]


def test_compare_modes_second_run_counts_and_the_first_is_not_evicted_for_it(budgets) -> None:
    at = open_page(**TINY_PAGE, compare="1")
    assert_no_exception(at)
    cache = runs.CACHE
    # A's model and run (B is A: the same run); what is derived from them (A against B, the
    # explorer's payload) can be rebuilt, so it may make room
    a_kept = {k: e.size for k, e in cache._entries.items() if k[0] in ("model", "run")}
    a_used = sum(a_kept.values())
    b_cfg = EncoderConfig(vocab_size=30522, d_model=64, num_heads=2, num_layers=1, d_ff=64)
    b_model = BYTES_PER_VALUE * block.parameters(b_cfg)
    budgets(a_used + 2 * b_model - 1, 50_000_000)  # building B's model fits only if A's go
    at.select_slider(key="b_d_model").set_value(64).run()
    assert_no_exception(at)
    assert {k: e.size for k, e in cache._entries.items() if k in a_kept} == a_kept  # not evicted
    assert errors(at) == [
        f"Setup B cannot run: This model needs about {size_text(2 * b_model)} of memory at its "
        f"peak; the server's memory is limited to {size_text(cache.budget)}, and "
        f"models that browser sessions keep take 0 MB of it, pages being drawn right now "
        f"{size_text(a_used)}. Try again in a moment, or once other sessions have ended."
    ]
    budgets(a_used + 3 * b_model, 50_000_000)
    at.run()
    assert not at.error
    assert a_used + b_model < cache.used <= cache.budget  # B's model and run are in the budget


SMALL = {"d_model": "64", "num_heads": "4", "num_layers": "2", "d_ff": "128"}


def training_bytes(cfg: TrainConfig, runs_: int) -> tuple[int, int]:
    """(the trained model, the training): the model's float32 parameters, from the config; a
    training holds four copies (weights, gradients, AdamW's two moments) and two of a batch's
    intermediates, per run."""
    enc = cfg.model
    model = BYTES_PER_VALUE * (block.parameters(enc) + (enc.d_model + 1) * cfg.num_classes)
    batch = estimate_activation_bytes(enc, cfg.batch_size, cfg.seq_len)
    return model, runs_ * (4 * model + 2 * batch)


def test_a_training_that_would_not_fit_is_refused_before_it_starts(budgets) -> None:
    at = open_page(view="Training", **SMALL)
    cfg = TrainConfig().with_model(
        d_model=64, num_heads=4, num_layers=2, d_ff=128, activation="gelu", positional="sinusoidal"
    )
    _, once = training_bytes(cfg, 1)
    _, two = training_bytes(cfg, 2)
    budgets(100_000_000, once + 1)  # one run fits, the race (two) and pre vs post (four) do not
    at.number_input(key="train_steps").set_value(50).run()  # (four runs fit the time limit)
    assert_no_exception(at)
    assert (
        f"Training this architecture 2 times (BERT vs ModernBERT) needs about {size_text(two)} "
        f"of memory; a browser session may keep at most {size_text(once + 1)} of models on this "
        "server."
    ) in warnings(at)  # the first job that does not fit
    assert at.button(key="train_compare").disabled and at.button(key="train_race").disabled
    assert not at.button(key="train_start").disabled
    budgets(100_000_000, once - 1)  # e.g. the session kept a model since the page was drawn
    at.button(key="train_start").click().run()  # the click is refused as it starts
    assert at.session_state["_training_lab"].job is None and runs.CACHE.kept() == 0
    assert at.button(key="train_start").disabled
    refusal = (
        f"Training this architecture once needs about {size_text(once)} of memory; a browser "
        f"session may keep at most {size_text(once - 1)} of models on this server."
    )
    assert warnings(at).count(refusal) == 1  # the click's answer, and why the button is off


@pytest.mark.slow  # 1,000 steps trained while the page reruns
def test_training_counts_while_it_runs_and_a_model_that_cannot_be_kept_says_so(
    budgets, monkeypatch
) -> None:
    monkeypatch.setattr(training_lab, "CHUNK_SECONDS", 0.5)
    at = open_page(view="Training", **SMALL)
    cfg = TrainConfig(steps=1000).with_model(
        d_model=64, num_heads=4, num_layers=2, d_ff=128, activation="gelu", positional="sinusoidal"
    )
    model, once = training_bytes(cfg, 1)
    budgets(100_000_000, once)
    at.number_input(key="train_steps").set_value(cfg.steps).run()
    at.button(key="train_start").click().run()
    lab = at.session_state["_training_lab"]
    assert lab.job.running and runs.CACHE.kept() == once  # counted from its start
    # by the time it ends, the session may keep less than its model
    monkeypatch.setattr(session_models, "SESSION_BUDGET", model - 1)
    deadline = time.monotonic() + 120
    while lab.job.running and time.monotonic() < deadline:
        at.run()
    assert not lab.job.running
    assert_no_exception(at)
    result = lab.job.results["pre-norm"]
    parameters = sum(t.numel() * t.element_size() for t in result.model.parameters())
    assert parameters == model  # the estimate from the config is the model's parameters
    sinusoid = 4 * cfg.seq_len * cfg.model.d_model  # the positions' buffer, max_len x d_model
    # not kept, but still held by the finished job: counted until the next training
    assert runs.CACHE.kept() == model + sinusoid and len(shelf(at)) == 0
    kept = model + sinusoid + 16 * len(task_tokenizer(cfg.vocab).to_str())
    assert (
        f"The pre-norm run's model was not kept: This model needs about {size_text(kept)} of "
        f"memory; a browser session may keep at most {size_text(model - 1)} of models on this "
        "server."
    ) in warnings(at)
    assert not [button for button in at.button if button.key == "train_open_0"]
