"""The lesson's steps as content: each step's text, its numbers, figures, tables and the views that
show it in full, for one run and sentence. It draws nothing itself: the Lesson view
(app/lesson/page.py) lays a step out on the page and app/lesson/handout.py writes every step into
one HTML file.

Every number a step's text shows is computed from the run and registered with the step (`Text.num`),
so the step's "numbers behind this step" table holds each of them, and a test checks that no
number appears in a text without being in its table. User text (tokens) stays apart from ours
(`Said`), so each renderer escapes it for its medium.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.ablation import output_change_chart, residual_cosine_chart
from app.charts.diagram import block_diagram
from app.charts.heads import norm_weighted_figure
from app.charts.steps import softmax_comparison, token_matrix, vector_strips
from app.runs import Run, ablation_effect
from app.settings import architecture_values
from app.views import readings
from app.views.changes import norm_does
from app.views.figures import (
    block_figure,
    head_figure,
    histogram_figure,
    layernorm_figure,
    overview_figure,
    residual_figure,
    token_table,
)
from encoder import hooks
from encoder.core import block
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES, placement_of
from encoder.inspect import activations, moves, norms, numpy_block, predictions
from encoder.inspect.lesson import (
    CLEAR_SHARE,
    MIN_DISTANCE,
    Links,
    attention_links,
    embedding_parts,
    head_roles,
    is_pronoun,
    is_special,
    numpy_block_check,
    pick_query,
)
from encoder.inspect.token_kinds import SINK_KINDS
from encoder.measure import scaling
from encoder.train.duration import (
    MAX_TRAINING_SECONDS,
    affordable_steps,
    duration_text,
    training_seconds,
)
from encoder.train.jobs import comparison_configs, comparison_warmup
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainConfig
from encoder.web.payload import start_at

TINY_PRESET = "default"  # the Training view's preset for "train a tiny model"
RACE_PRESET = "pre vs post: deep, high lr"  # ... and for the pre- vs post-norm race
LINK_ROWS = 10  # rows of the attention step's table shown: the chosen link and runners-up


@dataclass(frozen=True)
class Said:
    """User text (a token) inside our sentences: each renderer shows it literally, in quotes."""

    text: str


Part = str | Said
Paragraph = tuple[Part, ...]


@dataclass(frozen=True)
class OpenIn:
    """A view at a selection: the values are URL parameters (app.controls.state.follow_link)."""

    view: str
    values: dict[str, object]


class Text:
    """A step's paragraphs and every number they show."""

    def __init__(self) -> None:
        self.paragraphs: list[Paragraph] = []
        self.values: dict[str, object] = {}
        self.shown: dict[str, str] = {}

    def num(self, name: str, value: object, spec: str = "") -> str:
        """`value` as the text shows it, registered under `name` for the numbers table."""
        if isinstance(value, np.generic):
            value = value.item()
        shown = format(value, spec)
        if shown.startswith("-") and not shown.strip("-0.,%e+"):  # -0.000: a rounded zero
            shown = shown[1:]
        if name in self.shown and self.shown[name] != shown:
            raise ValueError(f"{name!r} shown as {self.shown[name]} and as {shown}")
        self.values[name], self.shown[name] = value, shown
        return shown

    def say(self, *parts: Part) -> None:
        self.paragraphs.append(tuple(part for part in parts if part != ""))


@dataclass(frozen=True)
class ExplorerAt:
    """The attention explorer (encoder/web) standing in for one of the step's figures wherever a
    host can draw it (the handout): this run's attention for the sentence, opened on a head."""

    figure: str  # the key of the figure it stands in for
    layer: int
    head: int
    mode: str  # "lines" | "matrix" | "heads"
    query: int | None = None  # the token pinned, if any

    def start(self) -> dict:
        """Where the explorer opens: its payload header's "start" (encoder.web.payload)."""
        return start_at(self.layer, self.head, self.mode, self.query)


@dataclass
class Step:
    """One step of the lesson, ready to lay out (its title is in STEPS)."""

    text: Text
    figures: list[tuple[str, go.Figure]] = field(default_factory=list)  # (key, figure)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)  # (caption, table)
    code: str | None = None
    links: list[OpenIn] = field(default_factory=list)
    uses_query: bool = False
    wide: bool = False  # tables below the text, the page's full width (a wide table)
    explorer: ExplorerAt | None = None

    def numbers(self) -> pd.DataFrame:
        """The numbers behind this step: each one the text shows, its value and how it is shown."""
        return pd.DataFrame(
            {
                "number": list(self.text.values),
                "value": [_full(value) for value in self.text.values.values()],
                "in the text": list(self.text.shown.values()),
            }
        )


def _full(value: object) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


# --- what every step reads ---------------------------------------------------------------------


@dataclass
class Lesson:
    """One run and sentence, and what the steps share: the query, its link, the head metrics."""

    run: Run
    sentence: int
    chosen_query: int | None = None  # the user's; None: the rule's

    @property
    def cfg(self):
        return self.run.cfg

    @property
    def tokens(self) -> list[str]:
        return self.run.tokens[self.sentence]

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def kind(self) -> str:
        """ "pretrained", "random", "task" (trained here on a toy task) or "uploaded"."""
        if self.run.task_model is not None:
            return "task"
        source = self.run.key.source
        return source if source in ("random", "pretrained") else "uploaded"

    @property
    def random(self) -> bool:
        return self.kind == "random"

    @property
    def model_name(self) -> str:
        return {
            "pretrained": "MiniLM",
            "random": "this random model",
            "task": f"this {self.run.task_model.task if self.run.task_model else ''} model",
            "uploaded": "this uploaded model",
        }[self.kind]

    @property
    def model_title(self) -> str:
        """model_name at the start of a sentence."""
        return self.model_name[0].upper() + self.model_name[1:]

    @property
    def unit(self) -> str:
        """What the model reads: a sentence, or a toy task's sequence."""
        return "sequence" if self.kind == "task" else "sentence"

    @cached_property
    def rule_query(self) -> int:
        return pick_query(self.tokens)

    @property
    def query(self) -> int:
        return self.rule_query if self.chosen_query is None else self.chosen_query

    @cached_property
    def links(self) -> Links:
        n = self.n
        weights = self.run.attention[:, self.sentence, :, :n, :n]  # [L, H, q, k]
        return attention_links(weights, self.tokens, self.query)

    @property
    def layer(self) -> int:
        return int(self.links.chosen["layer"])

    @property
    def head(self) -> int:
        return int(self.links.chosen["head"])

    @property
    def key(self) -> int:
        return int(self.links.chosen["key"])

    @cached_property
    def metrics(self) -> pd.DataFrame:
        return self.run.head_metrics(self.sentence)

    def end_name(self, end: str) -> str:
        """The first or last token by name: [CLS] / [SEP] where the model has them."""
        token = self.tokens[0 if end == "first" else -1]
        return token if is_special(token) else f"the {end} token"

    def said(self, position: int) -> Said:
        return Said(self.tokens[position])

    def query_said(self, text: Text) -> tuple[Part, ...]:
        """'“it” (position 10)'."""
        return self.said(self.query), f" (position {text.num('query position', self.query)})"


# --- the steps -----------------------------------------------------------------------------------


def tokens_step(lesson: Lesson) -> Step:
    run, text = lesson.run, Text()
    tokens, n = lesson.tokens, lesson.n
    ids = run.input_ids[lesson.sentence, :n]
    vocab = text.num("vocabulary size", lesson.cfg.vocab_size, ",")
    if lesson.kind == "task":
        text.say(
            f"This model reads sequences, not sentences: {text.num('tokens', n)} symbols, each "
            f"its own token, and symbol i is id i. Its vocabulary has {vocab} ids, and there is "
            "no [CLS] or [SEP]: the model answers one class per position."
        )
    else:
        text.say(
            f"The tokenizer cut this sentence into {text.num('tokens', n)} tokens; each is a row "
            f"number, its id, in a vocabulary of {vocab} entries."
        )
        if is_special(tokens[0]) and is_special(tokens[-1]):
            text.say(
                Said(tokens[0]),
                f" (id {text.num('first id', int(ids[0]))}) opens every sentence and ",
                Said(tokens[-1]),
                f" (id {text.num('last id', int(ids[-1]))}) closes it.",
            )
        pieces = [i for i, token in enumerate(tokens) if token.startswith("##")]
        if pieces:
            text.say(
                f"{text.num('word pieces', len(pieces))} token(s) continue the word before them "
                "(they start with ##), such as ",
                Said(tokens[pieces[0]]),
                ".",
            )
    text.say(
        "The lesson follows one token, ",
        *lesson.query_said(text),
        f", id {text.num('query id', int(ids[lesson.query]))}.",
    )
    if lesson.random:
        text.say(
            "The weights are random, but the tokens and ids are MiniLM's: they do not depend on "
            "the weights."
        )
    table = token_table(run, lesson.sentence).T.astype(str)
    table.columns = [str(position) for position in table.columns]
    return Step(
        text,
        tables=[(f"The {lesson.unit}'s tokens by position", table)],
        links=[OpenIn("Tokens", {})],
        uses_query=True,
        wide=True,
    )


def embedding_step(lesson: Lesson) -> Step:
    run, cfg, text = lesson.run, lesson.cfg, Text()
    q = lesson.query
    parts = embedding_parts(run.trace, lesson.sentence, q)
    d = text.num("d_model", cfg.d_model)
    token_norm = text.num("length of the token vector", float(np.linalg.norm(parts.token)), ".2f")
    if cfg.scale_embeddings:
        root = text.num("sqrt d_model", math.sqrt(cfg.d_model), ".2f")
        scale = f" after the multiplication by √d_model = {root}, as in the original Transformer."
    else:
        scale = ": this model does not multiply by √d_model (BERT and MiniLM do not)."
    text.say(
        f"Each id picks one row of the embedding table: a vector of d_model = {d} numbers. ",
        *lesson.query_said(text),
        f" gets a vector of length {token_norm}{scale}",
    )
    position_norm = text.num(
        "length of the position vector", float(np.linalg.norm(parts.position)), ".2f"
    )
    if cfg.positional == "sinusoidal":
        text.say(
            f"Its position adds a fixed vector of sines and cosines at "
            f"{text.num('wavelengths', cfg.d_model // 2)} wavelengths (length {position_norm}): "
            "no weights, the same for every model."
        )
    else:
        learned = "random rows, not yet learned" if lesson.random else "rows learned in training"
        text.say(
            f"Its position adds one of {text.num('max_len', cfg.max_len)} {learned} (length "
            f"{position_norm})."
        )
    out_norm = text.num("length of the block input", float(np.linalg.norm(parts.output)), ".2f")
    if cfg.embedding_norm:
        text.say(
            "Like BERT, this model also adds a token-type vector and normalises the sum with "
            f"LayerNorm: the first block reads a vector of length {out_norm}."
        )
    else:
        text.say(f"The first block reads their sum, a vector of length {out_norm}.")
    strips = vector_strips(
        [("token", parts.token), ("position", parts.position), ("block input", parts.output)],
        title=f"Position {q}: token, position, block input",
        robust=True,
    )
    title = strips.layout.title.text  # the colour note on a line of its own
    if " · " in title:
        strips.update_layout(title_text=title.replace(" · ", "<br><sup>", 1) + "</sup>")
    positions = run.trace[hooks.embed().position][: lesson.n].float().numpy()
    matrix = token_matrix(
        positions,
        lesson.tokens,
        lesson.n,
        title=f"The position vectors of these {lesson.n} positions ({cfg.positional})",
        colour_title="value",
    )
    return Step(
        text,
        figures=[("lesson_embedding", strips), ("lesson_positions", matrix)],
        links=[OpenIn("Attention steps", _steps_values(lesson, layer=0))],
        uses_query=True,
    )


def _why_query(lesson: Lesson) -> str:
    if lesson.chosen_query is not None:
        return "you chose it"
    if is_pronoun(lesson.tokens[lesson.query]):
        return "it is the sentence's last pronoun"
    if lesson.kind == "task":
        return "it is the sequence's last symbol"
    return f"it is the {lesson.unit}'s last content token"


def attention_step(lesson: Lesson) -> Step:
    text, links = Text(), lesson.links
    layer, head, key = lesson.layer, lesson.head, lesson.key
    cfg, n = lesson.cfg, lesson.n
    weight = text.num("weight", float(links.chosen["weight"]), ".3f")
    text.say("The query is ", *lesson.query_said(text), f": {_why_query(lesson)}.")
    specials = any(is_special(token) for token in lesson.tokens)
    rule = {
        "content": (
            ("a content token (not [CLS], [SEP] or punctuation)" if specials else "a token")
            + f" at least {text.num('minimum distance', MIN_DISTANCE)} positions away"
        ),
        "other": "another token (none is both content and far enough)",
        "self": "itself (it is the only token)",
    }[links.rule]
    text.say(
        f"Over all {text.num('layers', cfg.num_layers)} layers x "
        f"{text.num('heads', cfg.num_heads)} heads, its largest weight on {rule} is in "
        f"layer {text.num('layer', layer)}, head {text.num('head', head)}: {weight} on ",
        lesson.said(key),
        f" (position {text.num('key position', key)}).",
    )
    table = links.table
    other = table[table["key"] != key]
    if len(other):
        row = other.iloc[0]
        runner_up = text.num("runner-up layer", int(row["layer"]))
        text.say(
            f"The strongest link to a different token: layer {runner_up}, "
            f"head {text.num('runner-up head', int(row['head']))} gives "
            f"{text.num('runner-up weight', float(row['weight']), '.3f')} to ",
            lesson.said(int(row["key"])),
            f" (position {text.num('runner-up key position', int(row['key']))}).",
        )
    even = text.num("even spread 1/n", 1 / n, ".3f")
    text.say(f"An even spread over the {text.num('n', n)} tokens would give each {even}.")
    if lesson.random:
        text.say(
            "These weights are random: no head has learned where to look, so the strongest link "
            "is chance. A trained model such as MiniLM puts most of a row on a few tokens, and "
            "links a pronoun to the noun it stands for."
        )
    figure = head_figure(lesson.run, lesson.sentence, layer, head, lesson.random)
    return Step(
        text,
        figures=[("lesson_head", figure)],
        tables=[
            (
                "The chosen link, then the runners-up (one row per head; positions from 0)",
                table.head(LINK_ROWS),
            ),
        ],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
        uses_query=True,
        explorer=ExplorerAt("lesson_head", layer, head, "lines", lesson.query),
    )


def _steps_values(lesson: Lesson, layer: int | None = None) -> dict[str, int]:
    return {
        "step_layer": lesson.layer if layer is None else layer,
        "step_head": lesson.head,
        "step_query": lesson.query,
    }


def weight_step(lesson: Lesson) -> Step:
    text = Text()
    layer, head, key, q = lesson.layer, lesson.head, lesson.key, lesson.query
    steps = lesson.run.attention_steps(lesson.sentence, layer, head, q)
    table = steps.table[~steps.table["padding"]]
    row = table.loc[key]
    dk = steps.head_dim
    text.say(
        f"q·k: layer {text.num('layer', layer)}, head {text.num('head', head)} turns ",
        lesson.said(q),
        " into a query vector q and every token into a key vector k, each "
        f"d_k = {text.num('d_k', dk)} numbers. For ",
        lesson.said(key),
        f", q·k = {text.num('q·k', float(row['q_dot_k']), '.3f')}.",
    )
    root = text.num("sqrt d_k", math.sqrt(dk), ".3f")
    scaled = float(row["scaled"])
    text.say(
        f"÷ √d_k: dividing by {root} gives the score {text.num('score', scaled, '.3f')}, so "
        "that scores do not grow with the size of the head."
    )
    scores = table["scaled"].to_numpy(dtype=np.float64)
    total = float(np.exp(scores).sum())
    exp_key = math.exp(scaled)
    text.say(
        f"softmax: e^score = {text.num('e^score', exp_key, '.4g')}, over the sum of e^score "
        f"of all {text.num('n', lesson.n)} keys, {text.num('sum of e^score', total, '.4g')}: "
        f"weight = {text.num('weight', exp_key / total, '.3f')}, the model's own "
        f"{text.num('model weight', float(row['weight']), '.3f')}."
    )
    top = int(table["contribution_norm"].idxmax())
    text.say(
        f"The weighted sum of values: z = Σ weight × v, {text.num('d_k', dk)} numbers of length "
        f"{text.num('length of z', float(np.linalg.norm(steps.z)), '.3f')}; its largest term, "
        "from ",
        lesson.said(top),
        ", has length "
        f"{text.num('largest term', float(table['contribution_norm'][top]), '.3f')} on its own.",
    )
    figure = softmax_comparison(
        lesson.tokens,
        table["weight"].to_numpy(),
        steps.unscaled_weight[: lesson.n],
        head_dim=dk,
        entropies=(steps.entropy, steps.unscaled_entropy),
    )
    shown = table[["position", "key", "q_dot_k", "scaled", "weight"]]
    return Step(
        text,
        figures=[("lesson_softmax", figure)],
        tables=[("Every key's score and weight for this query", shown)],
        links=[OpenIn("Attention steps", _steps_values(lesson))],
        uses_query=True,
    )


def heads_step(lesson: Lesson) -> Step:
    text, n = Text(), lesson.n
    roles = head_roles(lesson.metrics, n).set_index("role")
    total = text.num("heads in all", lesson.cfg.num_layers * lesson.cfg.num_heads)
    text.say(
        f"Each of the {total} heads has its own pattern. Read from the head metrics of this "
        f"{lesson.unit}:"
    )
    where = {
        "previous token": "the token just before",
        "next token": "the token just after",
        "first token": lesson.end_name("first"),
        "last token": lesson.end_name("last"),
    }
    for role, target in where.items():
        r = roles.loc[role]
        value = text.num(f"{role}: share", float(r["value"]), ".1%")
        who = (
            f"layer {text.num(f'{role}: layer', int(r['layer']))}, "
            f"head {text.num(f'{role}: head', int(r['head']))}"
        )
        count = int(r["heads"])
        clear = text.num(f"{role}: heads above half", count)
        if count:
            heads = f"{clear} head puts" if count == 1 else f"{clear} heads put"
            its = "its" if count == 1 else "their"
            text.say(
                f"{heads} more than half of {its} weight on {target}; the most, {who}, {value}."
            )
        else:
            text.say(f"No head puts more than half on {target}; the most, {who}, {value}.")
    broad = roles.loc["broad"]
    text.say(
        f"The broadest, layer {text.num('broad: layer', int(broad['layer']))}, head "
        f"{text.num('broad: head', int(broad['head']))}, has entropy "
        f"{text.num('broad: entropy', float(broad['value']), '.2f')} nats; an even spread over "
        f"{text.num('n', n)} tokens has ln n = {text.num('ln n', math.log(n), '.2f')}."
    )
    even = text.num("even spread 1/n", 1 / n, ".1%")
    if lesson.random:
        text.say(
            f"With random weights no head has a role yet: every share is near {even}, an even "
            "spread. Trained models grow previous- and next-token heads, heads that park on "
            "[CLS] or [SEP] when they have nothing to do, and broad heads that average."
        )
    else:
        text.say(f"For comparison, an even spread gives each token {even}.")
    shares = roles.drop(index="broad")
    clearest = shares["value"].astype(float).idxmax()
    best = shares.loc[clearest]
    table = roles.reset_index()[["role", "layer", "head", "value", "even", "heads"]]
    table = table.rename(columns={"heads": f"heads above {CLEAR_SHARE:g} (broad: 0.9 ln n)"})
    figure = overview_figure(lesson.run, lesson.sentence, stretch=lesson.random)
    layer, head = int(best["layer"]), int(best["head"])
    return Step(
        text,
        figures=[("lesson_overview", figure)],
        tables=[("The head that plays each role most", table)],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
        explorer=ExplorerAt("lesson_overview", layer, head, "heads"),
    )


def ablation_step(lesson: Lesson) -> Step:
    text, run, n = Text(), lesson.run, lesson.n
    layer, head, q, s = lesson.layer, lesson.head, lesson.query, lesson.sentence
    effect = ablation_effect(run, ((layer, head),))
    text.say(
        f"Switch off layer {text.num('layer', layer)}, head {text.num('head', head)}, the head of "
        f"the attention step, and run the {lesson.unit} again: its output is zeroed, so "
        + (
            f"nothing before block {text.num('layer', layer)} changes."
            if layer
            else "the embeddings stay as they were."
        )
    )
    change = effect.output_change[s, :n]
    cosine = effect.output_cosine[s, :n]
    text.say(
        "At the model's output, ",
        *lesson.query_said(text),
        f" changes by {text.num('query change', float(change[q]), '.1%')} (cosine "
        f"{text.num('query cosine', float(cosine[q]), '.4f')}); the mean cosine over the "
        f"{lesson.unit} is {text.num('mean cosine', float(np.mean(cosine)), '.4f')}.",
    )
    most = int(np.nanargmax(change))
    text.say(
        "The token that moved most: ",
        lesson.said(most),
        f" (position {text.num('most moved position', most)}), by "
        f"{text.num('most moved change', float(change[most]), '.1%')}.",
    )
    if layer < lesson.cfg.num_layers - 1:
        moved = effect.head_changes(s, n).iloc[0]
        text.say(
            "Later heads read the changed stream, so their attention moves: most, layer "
            f"{text.num('moved layer', int(moved['layer']))}, head "
            f"{text.num('moved head', int(moved['head']))}, which sends "
            f"{text.num('moved share', float(moved['moved']), '.1%')} of its attention elsewhere."
        )
    else:
        text.say("It is in the last layer, so no later head can change.")
    if lesson.kind == "pretrained":
        text.say(
            "The sentence embedding (the mean of the outputs) keeps a cosine of "
            f"{text.num('sentence cosine', float(effect.sentence_cosine[s]), '.4f')}."
        )
    if lesson.random:
        text.say(
            "With random weights the head carried no skill: what changes is its random share of "
            "the sum. In a trained model, switching off a head with a role can break what it did."
        )
    stream = residual_cosine_chart(
        effect.residual_cosine[:, s, :n],
        effect.mean_residual_cosine[:, s],
        lesson.tokens,
        title=f"Without layer {layer}, head {head}: cosine of each token's stream with vs without",
    )
    return Step(
        text,
        figures=[
            ("lesson_ablation", output_change_chart(change, cosine, lesson.tokens)),
            ("lesson_ablation_stream", stream),
        ],
        links=[OpenIn("Attention", {"layer": layer, "head": head, "ablate": f"{layer}.{head}"})],
        uses_query=True,
    )


def moves_step(lesson: Lesson) -> Step:
    """Weights are not the whole story: what each head moves (Kobayashi et al. 2020)."""
    text, run, s, n = Text(), lesson.run, lesson.sentence, lesson.n
    shares = moves.sink_shares(run.trace, run.model(), run.tokens, sentence=s)
    shares["sinks"] = shares[list(SINK_KINDS)].sum(axis=1)
    raw = shares[shares["reading"] == moves.WEIGHT].reset_index(drop=True)
    moved = shares[shares["reading"] == moves.NORM_WEIGHTED].reset_index(drop=True)
    total = text.num("heads in all", len(raw))
    if float(raw["sinks"].max()) == 0:  # a toy task's sequences: no [CLS], [SEP], punctuation
        text.say(
            f"{lesson.model_title}'s {lesson.unit}s have no [CLS], [SEP] or punctuation for a "
            "head to park its weight on. In MiniLM, much of the weight sits on [CLS] yet moves "
            "little: switch to MiniLM to see weight and what is moved part."
        )
        return Step(text, links=[OpenIn("Attention", {"layer": lesson.layer, "head": lesson.head})])
    over_half = text.num("heads above half on [CLS]", int((raw["[CLS]"] > CLEAR_SHARE).sum()))
    text.say(
        f"A head's weights say where it looks, not what it takes. In this {lesson.unit}, "
        f"{over_half} of the {total} heads put more than half of their weight on [CLS]. "
        f"Averaged over the heads, {text.num('weight on sinks', float(raw['sinks'].mean()), '.0%')}"
        " of the weight goes to [CLS], [SEP] and punctuation."
    )
    text.say(
        "Each key hands over weight × f(key), f being the head's value projection and its part "
        "of the output projection. Count the size of that instead of the weight alone and the "
        "share that comes from [CLS], [SEP] and punctuation is "
        f"{text.num('moved from sinks', float(moved['sinks'].mean()), '.0%')}: much of that "
        "weight is parked on tokens whose f(key) is short, and moves almost nothing."
    )
    best = int(raw["sinks"].idxmax())
    layer, head = int(raw.loc[best, "layer"]), int(raw.loc[best, "head"])
    text.say(
        f"The most extreme: layer {text.num('sink layer', layer)}, head "
        f"{text.num('sink head', head)} puts "
        f"{text.num('sink head weight', float(raw.loc[best, 'sinks']), '.0%')} of its weight "
        "there, yet only "
        f"{text.num('sink head moved', float(moved.loc[best, 'sinks']), '.0%')} of what it moves "
        "comes from there."
    )
    if lesson.random:
        text.say(
            "With random weights no head has learned to park its weight: both readings stay "
            "close to an even spread. Switch to MiniLM to see them part."
        )
    tokens = run.padded_tokens[s]
    weights = head_figure(run, s, layer, head, stretch=False)
    moved_matrix = readings.norm_weighted_head(run, layer, s, head)
    title = f"Layer {layer}, head {head}: what is moved, ||weight x f(key)||"
    return Step(
        text,
        figures=[
            ("lesson_moves_weights", weights),
            ("lesson_moves_norms", norm_weighted_figure(moved_matrix, tokens, n, title)),
        ],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
    )


def layernorm_step(lesson: Lesson) -> Step:
    text, run, cfg, s, layer = Text(), lesson.run, lesson.cfg, lesson.sentence, lesson.layer
    by_depth = norms.mean_norm_by_depth(run.residual_norms, s)
    ratio = float(by_depth.iloc[-1]) / float(by_depth.iloc[0])
    first = text.num("stream after the embeddings", float(by_depth.iloc[0]), ".2f")
    last = text.num("stream after the last block", float(by_depth.iloc[-1]), ".2f")
    change = f"x{text.num('last over first', ratio, '.2f')}: here it {predictions.growth(ratio)}"
    kind = NORM_TYPE_NAMES[cfg.norm_type]
    final = text.num("last block", cfg.num_layers - 1)
    if cfg.norm_first:
        text.say(
            f"This model is pre-norm: x + f({kind}(x)). Each block normalises a copy of the "
            "residual stream before attention and before the feed-forward, and adds the result "
            "back; the stream itself is never normalised, so nothing holds its size: a token's "
            f"vector has length {first} on average after the embeddings, {last} after block "
            f"{final} ({change}). A final {kind} closes it."
        )
    else:
        text.say(
            f"This model is post-norm, like BERT and the original Transformer: {kind}(x + f(x)). "
            "The stream is normalised after every residual add, so the norm holds its size: a "
            f"token's vector has length {first} on average after the embeddings, {last} after "
            f"block {final} ({change})."
        )
    stats = run.layernorm_stats
    row = stats[
        (stats["sentence"] == s)
        & (stats["layer"] == layer)
        & (stats["norm"] == "ln1")
        & (stats["position"] == lesson.query)
    ].iloc[0]
    text.say(
        f"Inside block {text.num('layer', layer)}, ln1 {norm_does(cfg.norm_type)}: ",
        *lesson.query_said(text),
        f" goes in with mean {text.num('ln1 input mean', float(row['in_mean']), '.3f')} and std "
        f"{text.num('ln1 input std', float(row['in_std']), '.3f')}, and comes out with mean "
        f"{text.num('ln1 output mean', float(row['out_mean']), '.3f')} and std "
        f"{text.num('ln1 output std', float(row['out_std']), '.3f')}.",
    )
    other = "post" if cfg.norm_first else "pre"
    text.say(
        f"Switch the sidebar to {other}-norm (random weights) to see the other placement on "
        "your sentence."
    )
    return Step(
        text,
        figures=[
            ("lesson_residual", residual_figure(run, s)),
            ("lesson_layernorm", layernorm_figure(run, s, layer)),
        ],
        links=[OpenIn("LayerNorm", {"ln_layer": layer})],
        uses_query=True,
    )


def feed_forward_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    s, layer, q = lesson.sentence, lesson.layer, lesson.query
    name = ACTIVATION_NAMES[cfg.activation]
    row = run.activation_summary(s).feed_forward.iloc[layer]
    text.say(
        f"After attention, every token goes through the same two-layer network on its own: from "
        f"d_model = {text.num('d_model', cfg.d_model)} up to d_ff = "
        f"{text.num('d_ff', cfg.d_ff)} numbers, through {name}, and back down."
    )
    negative = text.num("share below 0", float(row["share_negative"]), ".1%")
    zero = text.num("share exactly 0", float(row["share_zero"]), ".2%")
    if cfg.activation == "relu":
        text.say(
            f"In block {text.num('layer', layer)}, {negative} of the values before ReLU are "
            "negative, and ReLU sets each of them to zero: "
            f"{zero} of the hidden values are exactly zero, units that are off for that token. "
            "GELU would bend them toward zero instead, keeping small negative values."
        )
    else:
        text.say(
            f"In block {text.num('layer', layer)}, {negative} of the values before GELU are "
            "negative. GELU(x) = x·Φ(x) bends them toward zero without cutting them off: only "
            f"{zero} end exactly at zero. ReLU would set all {negative} to zero."
        )
    top = activations.top_units(run.trace, s, layer, q, k=1)
    text.say(
        "For ",
        *lesson.query_said(text),
        f", the most active unit is number {text.num('top unit', int(top.units[0]))}, at "
        f"{text.num('top unit value', float(top.values[0]), '.2f')}.",
    )
    return Step(
        text,
        figures=[("lesson_histogram", histogram_figure(run, s, layer))],
        links=[OpenIn("Activations", {"act_layer": layer, "act_token": q})],
        uses_query=True,
    )


def numpy_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    check = numpy_block_check(cfg, run.weights, run.trace)
    source = inspect.getsource(numpy_block)
    code = source[source.index("import math") :]
    worst = check["max_abs_diff"].max()
    lines = sum(1 for line in code.splitlines() if line.strip())  # not counting blank ones
    placement = placement_of(cfg.norm_first)
    text.say(
        f"The whole block fits in {text.num('lines of NumPy', lines)} lines of "
        f"plain NumPy, no torch: {NORM_TYPE_NAMES[cfg.norm_type]}, multi-head attention with a "
        f"padding mask, a feed-forward with {ACTIVATION_NAMES[cfg.activation]}, residual adds, "
        f"{placement}-norm as this model."
    )
    padded = bool((run.attention_mask == 0).any())
    text.say(
        "Fed each block's input from this run and the model's own weights, it gives the "
        f"model's output for all {text.num('blocks', cfg.num_layers)} blocks, every token"
        + (", padding included" if padded else "")
        + f": the largest difference is {text.num('max_abs_diff', float(worst), '.1e')}, on "
        f"numbers up to {text.num('largest value', float(check['max_abs_value'].max()), '.1f')} "
        "in size."
    )
    return Step(
        text,
        tables=[("NumPy against the model, block by block", check)],
        code=code,
        links=[OpenIn("Shapes", {})],
    )


def cost_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    cost = run.cost
    B, T = run.input_ids.shape
    d = cfg.d_model
    text.say(
        f"A block takes [batch, tokens, d_model] = [{text.num('batch', B)}, "
        f"{text.num('padded tokens', T)}, {text.num('d_model', d)}] and returns the same shape. "
        f"Inside, attention makes a [tokens x tokens] table per head: "
        f"{text.num('heads', cfg.num_heads)} of [{text.num('padded tokens', T)} x "
        f"{text.num('padded tokens', T)}]; the feed-forward widens each token to "
        f"{text.num('d_ff', cfg.d_ff)}."
    )
    counts = run.parameter_counts.set_index("component")["params"]
    text.say(
        f"The model has {text.num('parameters', int(cost['params']), ',')} parameters: "
        f"{text.num('attention parameters', int(counts['attention (all layers)']), ',')} in "
        "attention, "
        f"{text.num('feed-forward parameters', int(counts['feed-forward (all layers)']), ',')} "
        f"in the feed-forward layers, "
        f"{text.num('token embedding parameters', int(counts['token embedding']), ',')} in the "
        "token embedding."
    )
    attention_flops = cost["attention_flops"]
    doubled = scaling.flops_at(cfg, B, 2 * T)
    doubled_attention, doubled_ffn = doubled["attention_flops"], doubled["ffn_flops"]
    mflops = 1e6
    text.say(
        f"One pass over this input costs {text.num('MFLOPs', cost['flops'] / mflops, ',.1f')} "
        f"MFLOPs. Attention's scores and weighted sums are "
        f"{text.num('attention MFLOPs', attention_flops / mflops, ',.2f')} of them and grow "
        f"with tokens²: twice the tokens, "
        f"{text.num('attention MFLOPs at twice the tokens', doubled_attention / mflops, ',.2f')}. "
        f"The feed-forward's {text.num('feed-forward MFLOPs', cost['ffn_flops'] / mflops, ',.2f')}"
        f" grow with tokens: twice the tokens, "
        f"{text.num('feed-forward MFLOPs at twice the tokens', doubled_ffn / mflops, ',.2f')}."
    )
    return Step(
        text,
        figures=[("lesson_block", block_figure(run))],
        tables=[("Parameters by component", run.parameter_counts)],
        links=[OpenIn("Shapes", {})],
    )


def _training_values(preset: str) -> dict[str, object]:
    """The URL values that open the Training view on a preset: random weights with the preset's
    architecture in the sidebar."""
    cfg = TrainConfig(**TRAINING_PRESETS[preset])
    return {"source": "random", **architecture_values(cfg.encoder_config()), "train_preset": preset}


def training_step(lesson: Lesson) -> Step:
    text, n = Text(), lesson.n
    metrics = lesson.metrics
    sharpest = int(metrics["max_weight"].idxmax())
    row = metrics.iloc[sharpest]
    layer, head = int(row["layer"]), int(row["head"])
    peak = text.num("sharpest head: mean largest weight", float(row["max_weight"]), ".3f")
    even = text.num("even spread 1/n", 1 / n, ".3f")
    who = f"layer {text.num('sharpest layer', layer)}, head {text.num('sharpest head', head)}"
    if lesson.random:
        text.say(
            f"These weights are random, and so is their attention: the sharpest head, {who}, "
            f"gives its favourite key only {peak} of a row on average, where an even spread "
            f"gives {even} and a head that has learned to pick one key gives it the whole row. "
            "Patterns are learned."
        )
    else:
        text.say(
            f"{lesson.model_title} is trained: its sharpest head, {who}, gives its "
            f"favourite key {peak} of a row on average, "
            f"{text.num('times an even spread', float(row['max_weight']) * n, '.1f')} times the "
            f"{even} of an even spread. With random weights, every head spreads almost evenly."
        )
    tiny = TrainConfig(**TRAINING_PRESETS[TINY_PRESET])
    text.say(
        f"Train a tiny model and watch a head form: {text.num('tiny layers', tiny.num_layers)} "
        f"layers x {text.num('tiny heads', tiny.num_heads)} heads learn the {tiny.task} task on "
        f"sequences of {text.num('tiny sequence length', tiny.seq_len)} digits in "
        f"{text.num('tiny steps', tiny.steps)} steps, "
        f"{text.num('tiny training time', training_seconds(tiny), '.0f')} s by the estimate. "
        "Press Train in the Training view; when it is done, open the trained model and come "
        "back to the Lesson: every step then reads the model you trained."
    )
    figure = head_figure(lesson.run, lesson.sentence, layer, head, lesson.random)
    return Step(
        text,
        figures=[("lesson_sharpest", figure)],
        links=[OpenIn("Training", _training_values(TINY_PRESET))],
    )


def race_step(lesson: Lesson) -> Step:
    text, cfg = Text(), lesson.cfg
    race = TrainConfig(**TRAINING_PRESETS[RACE_PRESET])
    runs = comparison_configs(race)
    placement = placement_of(cfg.norm_first)
    text.say(
        f"{lesson.model_title} is {placement}-norm. Pre-norm, x + f(LN(x)), leaves "
        "the residual stream a straight path from the loss back to every layer; post-norm, "
        "LN(x + f(x)), sends the gradient through a norm in every block, which makes deep "
        "models hard to start training without a warmup."
    )
    text.say(
        f"The race trains one {text.num('race layers', race.num_layers)}-layer model on the "
        f"{race.task} task both ways, at learning rate {text.num('learning rate', race.lr, 'g')}, "
        f"with and without {text.num('warmup steps', comparison_warmup(race))} warmup steps: "
        f"{text.num('runs', len(runs))} runs of {text.num('race steps', race.steps)} steps, "
        f"{text.num('race time', duration_text(training_seconds(race, len(runs))))} here by the "
        "estimate."
    )
    seconds = training_seconds(race, len(runs))
    if seconds > MAX_TRAINING_SECONDS:
        steps = affordable_steps(race, len(runs), 1.0, MAX_TRAINING_SECONDS)
        text.say(
            "That is over the Training view's limit of "
            f"{text.num('training limit (min)', MAX_TRAINING_SECONDS // 60)} min: it offers the "
            f"nearest architecture that fits, or {text.num('steps that fit', steps)} steps."
        )
    chance = math.log(race.num_classes)
    text.say(
        f"Watch which losses leave ln {text.num('classes', race.num_classes)} = "
        f"{text.num('chance loss', chance, '.2f')}, the loss of guessing, and which stay there."
    )
    other = not cfg.norm_first
    text.say(
        f"The figure shows this model's block as it would be {placement_of(other)}-norm, with the "
        "same shapes."
    )
    B, T = lesson.run.input_ids.shape
    diagram = block_diagram(block.block_ops(replace(cfg, norm_first=other), 0, B, T), other)
    return Step(
        text,
        figures=[("lesson_other_block", diagram)],
        links=[OpenIn("Training", _training_values(RACE_PRESET))],
    )


STEPS: tuple[tuple[str, Callable[[Lesson], Step]], ...] = (  # (title, builder), in order
    ("The tokens and their ids", tokens_step),
    ("Embeddings and positions", embedding_step),
    ("One query's attention", attention_step),
    ("How the weight is computed", weight_step),
    ("Heads differ", heads_step),
    ("Switching that head off", ablation_step),
    ("Weights are not the whole story", moves_step),
    ("LayerNorm and the residual stream", layernorm_step),
    ("The feed-forward layer: ReLU or GELU", feed_forward_step),
    ("The whole block in NumPy", numpy_step),
    ("Shapes and what the block costs", cost_step),
    ("Random weights have no pattern: train one", training_step),
    ("The pre- vs post-norm training race", race_step),
)
TITLES = tuple(title for title, _ in STEPS)
