"""Heads across a corpus: what every head does over many sentences (Clark et al. 2019), heads
grouped by their behaviour, a fingerprint of all heads (head_fingerprint.js), and one head's
queries and keys from the whole corpus in one plane (AttentionViz), drawn in the browser."""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd
import streamlit as st

from app.components.head_scatter import head_scatter
from app.components.module_figures import module_figure
from app.corpus_stats import scatter_for, stats_for
from app.i18n import _, number, told
from app.keys import Selection
from app.memory import RunTooLarge
from app.page import corpus_choice
from app.page.changes import what_changed
from app.page.corpus_choice import chosen_sentences
from app.page.figures import Drawn
from app.page.layout import header, key_for, missing, number_table, shown, side_by_side
from app.page.widgets import pick_index
from app.runs import Runs
from encoder.inspect.corpus import (
    BROAD,
    FINGERPRINT,
    GROUP_RULE,
    MAX_TOKENS,
    MIXED,
    fingerprint,
    group_counts,
)
from encoder.web import hosts
from encoder.web.head_fingerprint import fingerprint_data

LABELS = ("setup", "layer", "head", "group")
KEYS = corpus_choice.KEYS  # the corpus radio's and text area's


def clear_roles(counts: pd.DataFrame) -> int:
    """How many heads fall in a group with a clear role (not broad, not mixed)."""
    return int(counts.loc[~counts["group"].isin([BROAD, MIXED]), "heads"].sum())


def roles_sentence(counts: pd.DataFrame, name: str) -> str:
    """How many heads have a clear role, and which, in words."""
    roles = ", ".join(
        f"{row.heads} {header(row.group)}"
        for row in counts.itertuples()
        if row.heads and row.group not in (BROAD, MIXED)
    )
    values = dict(clear=clear_roles(counts), heads=int(counts["heads"].sum()), roles=roles)
    said = (
        _("{clear} of {heads} heads have a clear role over this corpus ({roles}).", **values)
        if roles
        else _("{clear} of {heads} heads have a clear role over this corpus.", **values)
    )
    return _("Setup {name}: {said}", name=name, said=said) if name else said


def compare_sentence(counts: dict[str, pd.DataFrame], random: Collection[str]) -> str:
    """Setup A against setup B: heads with a role, and, where the setup without any has random
    weights (`random`: the names of the setups that have), why."""
    roles = {name: clear_roles(counts[name]) for name in ("A", "B")}
    text = _("Heads with a clear role: {a} in setup A, {b} in setup B.", a=roles["A"], b=roles["B"])
    none = [name for name, count in roles.items() if count == 0]
    if len(none) == 1 and none[0] in random:
        text += " " + _(
            "Random weights give heads no roles: setup {name}'s weights were never "
            "trained, and roles such as previous token or parking on [CLS] are learned.",
            name=none[0],
        )
    return text


def draw(runs: Runs, chosen: Selection) -> None:
    st.markdown(
        _(
            "One sentence cannot show what a head is for. Here every head reads a whole corpus: "
            "its mean attention to the previous token, the next token, itself, [CLS], [SEP] and "
            "punctuation, and how spread out it is."
        )
    )
    what_changed(runs)
    sentences = chosen_sentences()
    if sentences is None:
        return
    computed = {}
    for name, run in runs.named():
        try:
            computed[name] = stats_for(run, sentences)
        except (ValueError, RunTooLarge) as error:
            st.warning(
                _("Setup {name}: {said}", name=name, said=told(error))
                if runs.b is not None
                else told(error)
            )
    if not computed:
        return
    st.caption(told(GROUP_RULE))
    if len(computed) == 2:
        random = [name for name, run in runs.named() if run.key.source == "random"]
        st.markdown(
            compare_sentence({n: group_counts(c[1].table) for n, c in computed.items()}, random)
        )
    for name, _run in side_by_side(runs):
        if (name or "A") not in computed:
            continue
        corpus, stats = computed[name or "A"]
        counts = group_counts(stats.table)
        st.markdown(roles_sentence(counts, name))
        if corpus.truncated:
            st.caption(
                _(
                    "{count} sentence(s) were cut to {tokens} tokens.",
                    count=corpus.truncated,
                    tokens=MAX_TOKENS,
                )
            )
        st.caption(
            _(
                "{tokens} tokens; computed in {seconds} s, kept for the next look.",
                tokens=number(corpus.token_count),
                seconds=number(stats.seconds, 1, grouped=False),
            )
        )
        st.dataframe(shown(counts.set_index("group").T.rename(index=header)), width="stretch")
        grid = fingerprint(stats.table)
        layers, heads = stats.table["layer"].tolist(), stats.table["head"].tolist()
        data = fingerprint_data(grid, layers, heads, [header(name) for name in FINGERPRINT])
        module_figure(Drawn(hosts.FINGERPRINT, data), key=key_for("corpus_fingerprint", name))
        number_table(shown(stats.table), tuple(header(name) for name in LABELS), height=300)
    st.fragment(_one_head)(runs, computed)


def _one_head(runs: Runs, computed: dict) -> None:
    """One head's queries and keys over the corpus: picking another head reruns this part alone
    (a fragment)."""
    setups = runs.named()
    left, right = st.columns(2)
    layer = pick_index(_("Layer"), max(r.cfg.num_layers for _n, r in setups), "layer", left)
    head = pick_index(_("Head"), max(r.cfg.num_heads for _n, r in setups), "head", right)
    for name, run in side_by_side(runs):
        if (name or "A") not in computed:
            continue
        if missing(name or "A", "layer", layer, run.cfg.num_layers) or missing(
            name or "A", "head", head, run.cfg.num_heads
        ):
            continue
        corpus, stats = computed[name or "A"]
        st.markdown(
            _(
                "**Layer {layer}, head {head}**: every query (●) and key (○) of the corpus, "
                "projected together to two dimensions (PCA). Keys are shifted to the queries' "
                "centre, which changes no attention weight.",
                layer=layer,
                head=head,
            )
        )
        scatter = scatter_for(run, corpus, stats, layer, head)
        head_scatter(scatter, key=f"head_scatter_{name or 'A'}")
