"""The attention explorer's payload (encoder.web.payload) of the runs a view draws: one sentence of
setup A, and of B in compare mode, with each layer's local window and its two more readings (what
each head moves: the value norms of encoder.inspect.moves; and attention rollout,
encoder.inspect.rollout), built once and kept in the shared cache (app.memory.CACHE) with its real
bytes, so a rerun that changes nothing the explorer draws sends the same bytes (the browser keeps
them) and builds nothing. On the page the payload carries no words: the explorer speaks the page's
(encoder/web/shared.js's PAGE_SPEECH), so a language switch sends it again only as a reference; a
file of it (a download, the handout) has the page's language and words put in its header
(in_page_language: encoder.web.payload.with_words)."""

from __future__ import annotations

from app.i18n import _, direction, language, told
from app.i18n.browser import words_now
from app.memory import CACHE
from app.runs import Run, Runs, derived_tag
from encoder.inspect import moves
from encoder.inspect.neuron import qk_names, qk_vectors
from encoder.inspect.rollout import rollout
from encoder.web.payload import (
    build_setup,
    encode,
    every_head_fits,
    layer_windows,
    qk_fit,
    with_words,
)

BUILD_COPIES = 4  # float32 weights, their uint16 copy, the block sums and the rollout, per setup


def _chosen(run: Run, sentence: int, layer: int, head: int, qk: bool) -> tuple[int, int] | None:
    """The head a long input sends at full resolution, with its q and k where `qk` (within this
    run's model); None when every head (and every head's q and k) are sent anyway."""
    cfg, n = run.cfg, run.n_valid(sentence)
    if every_head_fits(cfg.num_layers, cfg.num_heads, n) and (
        not qk or qk_fit(cfg.num_layers, cfg.num_heads, n, cfg.head_dim)
    ):
        return None
    return min(layer, cfg.num_layers - 1), min(head, cfg.num_heads - 1)


def _readings(run: Run, sentence: int, qk: bool) -> dict:
    """One sentence's value norms [L, H, n], rollout [L, n, n] and every head's q and k (the
    neuron view's) as build_setup's keywords; no norms for a run without a model to read them
    from (a stand-in), no q and k unless asked (`qk`) and kept by the run."""
    n = run.n_valid(sentence)
    one = slice(sentence, sentence + 1)
    rolled = rollout(run.trace.attention[:, one], run.trace.attention_mask[one])  # [L, 1, T, T]
    found = {"rollout": rolled[:, 0, :n, :n]}
    if run.source is not None:
        norms = moves.value_norms(run.trace, run.model())  # [L, B, H, T]
        found["norms"] = norms[:, sentence, :, :n]
    if qk and set(qk_names(run.cfg)) <= run.trace.tensors.keys():
        found["qk"] = qk_vectors(run.trace, sentence, n)
    return found


def _build(runs: Runs, sentence: int, chosen: list, stretch: bool, qk: bool) -> bytes:
    setups = []
    for (name, run), pair in zip(runs.named(), chosen, strict=True):
        n = run.n_valid(sentence)
        try:
            setups.append(
                build_setup(
                    run.attention[:, sentence, :, :n, :n],  # [layer, head, query, key]
                    run.tokens[sentence],
                    name=name,
                    chosen=[pair or (0, 0)],
                    windows=layer_windows(run.cfg),
                    **_readings(run, sentence, qk),
                )
            )
        except ValueError as error:
            said = _("Setup {name}: {error}", name=name, error=told(error))
            raise ValueError(said if runs.b is not None else told(error)) from None
    return encode(setups, stretch=stretch)


def explorer_payload(
    runs: Runs, sentence: int, layer: int, head: int, stretch: bool, qk: bool = False
) -> bytes:
    """The explorer's bytes for one sentence of every setup, with every head's q and k where `qk`
    (the neuron view's: its runs keep them); ValueError (a sentence for the page)
    when the attention cannot be drawn (a NaN, too many tokens or heads), RunTooLarge when it
    does not fit in the memory budget."""
    named = runs.named()
    chosen = [_chosen(run, sentence, layer, head, qk) for _name, run in named]
    reserve = sum(BUILD_COPIES * 4 * run.attention[:, sentence].size for _name, run in named)
    built = CACHE.get_or_build(
        ("explorer", tuple(run.key for _name, run in named), sentence, tuple(chosen), stretch, qk),
        lambda: _build(runs, sentence, chosen, stretch, qk),
        len,
        reserve=reserve,
        what=_("The attention explorer's data"),
        keep=tuple(("run", run.key) for _name, run in named),
        tag=derived_tag(*(run for _name, run in named)),
    )
    return built


def in_page_language(payload: bytes) -> bytes:
    """An explorer payload with the page's language and the browser's words in it, for a file
    that opens without the page (a download, the handout)."""
    return with_words(payload, language(), words_now(), direction())
