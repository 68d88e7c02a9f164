"""What the guided lesson picks from a run, as plain rules: the query, its strongest long-range
link, the heads with a clear role, the embedding's parts, and every block recomputed in NumPy.

The rules read only the run (tokens, attention, head metrics, weights), never a hand-written list
of heads, so they hold for any model: MiniLM, random weights, a model trained on a toy task (whose
sequences have no [CLS] or [SEP]) or an uploaded checkpoint. Plain numpy and pandas out.

Positions count the sentence's real tokens from 0 ([CLS], where there is one, is 0).
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import block_path
from encoder.inspect import numpy_block
from encoder.inspect.numpy_block import ACTIVATIONS, encoder_block

# English personal, possessive and reflexive pronouns (lower case): the query the lesson prefers.
_PRONOUN_WORDS = (
    "i me my mine myself you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself we us our ours ourselves they them their theirs themselves"
)
PRONOUNS = frozenset(_PRONOUN_WORDS.split())
MIN_DISTANCE = 2  # a link's key is at least this many positions from the query
CLEAR_SHARE = 0.5  # a head with more than this share on one kind of key has that role
BROAD_ENTROPY = 0.9  # a head whose entropy is above this share of ln n spreads broadly
LINK_COLUMNS = ("layer", "head", "query", "key", "weight")


# How tokenizers mark where a word starts or goes on: WordPiece's "##" continues a word,
# byte-level BPE's "Ġ" (RoBERTa, ModernBERT) and SentencePiece's "▁" (XLM-R, ALBERT) stand for
# the space before one.
WORD_MARKS = ("##", "Ġ", "▁")


def is_special(token: str) -> bool:
    """[CLS], [SEP], [PAD], [UNK], [MASK], <s>, </s>, <pad>, <unk>, <mask> and their like."""
    return len(token) > 2 and (
        (token.startswith("[") and token.endswith("]"))
        or (token.startswith("<") and token.endswith(">"))
    )


def word_text(token: str) -> str:
    """The text a token spells, without its tokenizer's word mark ("Ġhe" -> "he")."""
    for mark in WORD_MARKS:
        if token.startswith(mark):
            return token[len(mark) :]
    return token


def is_content(token: str) -> bool:
    """A token that carries a word or symbol: not special, not punctuation only."""
    return not is_special(token) and any(ch.isalnum() for ch in word_text(token))


def is_pronoun(token: str) -> bool:
    return word_text(token).lower() in PRONOUNS


def pick_query(tokens: list[str]) -> int:
    """The lesson's query: the sentence's last pronoun, else its last content token, else its
    last token that is not special, else its last token. A toy task's sequence (symbols, no
    [CLS] or [SEP]) gets its last position."""
    for test in (is_pronoun, is_content, lambda token: not is_special(token)):
        found = [i for i, token in enumerate(tokens) if test(token)]
        if found:
            return found[-1]
    return len(tokens) - 1


@dataclass(frozen=True)
class Links:
    """From one query, each head's strongest link to a candidate key, strongest first."""

    table: pd.DataFrame  # LINK_COLUMNS, one row per (layer, head), sorted by weight, largest first
    candidates: list[int]  # the key positions the rule allowed
    rule: str  # "content": content tokens at least MIN_DISTANCE away; "other": every other
    # token (no content token was far enough); "self": the query is the only token

    @property
    def chosen(self) -> pd.Series:
        """The link the lesson shows: the largest weight."""
        return self.table.iloc[0]


def link_candidates(tokens: list[str], query: int) -> tuple[list[int], str]:
    """The keys a link may end on and which rule allowed them (see Links.rule). Content leaves
    out [CLS], [SEP], punctuation, the query and its neighbours."""
    far = [
        j for j, token in enumerate(tokens) if is_content(token) and abs(j - query) >= MIN_DISTANCE
    ]
    if far:
        return far, "content"
    others = [j for j in range(len(tokens)) if j != query]
    return (others, "other") if others else ([query], "self")


def attention_links(attention: np.ndarray, tokens: list[str], query: int) -> Links:
    """attention: one sentence's weights over its real tokens, [layer, head, query, key]. For every
    layer and head, the largest weight from `query` to a candidate key (link_candidates); rows
    sorted by weight, largest first (ties: lower layer, then head, first)."""
    L, H, n, _ = attention.shape
    if len(tokens) != n or not 0 <= query < n:
        raise ValueError(f"query {query} and {len(tokens)} tokens for {n} positions")
    candidates, rule = link_candidates(tokens, query)
    row = np.asarray(attention[:, :, query, :])[:, :, candidates]  # [L, H, candidates]
    best = row.argmax(axis=-1)  # [L, H]
    layer, head = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    table = pd.DataFrame(
        {
            "layer": layer.ravel(),
            "head": head.ravel(),
            "query": query,
            "key": np.asarray(candidates)[best].ravel(),
            "weight": np.take_along_axis(row, best[..., None], axis=-1).ravel(),
        },
        columns=list(LINK_COLUMNS),
    )
    table = table.sort_values("weight", ascending=False, kind="stable", ignore_index=True)
    return Links(table=table, candidates=candidates, rule=rule)


# role -> the head_metrics column that measures it
ROLES = {
    "previous token": "to_previous",
    "next token": "to_next",
    "first token": "to_first",
    "last token": "to_last",
    "broad": "entropy",
}


def head_roles(metrics: pd.DataFrame, n: int) -> pd.DataFrame:
    """For each role, the head that plays it most (encoder.inspect.heads.head_metrics' table):
    previous / next token, first / last token (where [CLS] and [SEP] sit) by their share of
    attention, broad by entropy. Columns: role, layer, head, value, even (the value of an even
    spread over the n real tokens: 1/n, or ln n for entropy), heads (how many heads play the role
    clearly: share above CLEAR_SHARE, entropy above BROAD_ENTROPY x ln n)."""
    rows = []
    for role, column in ROLES.items():
        values = metrics[column].to_numpy()
        best = int(np.nanargmax(values))
        if column == "entropy":
            even, clear = math.log(n), values > BROAD_ENTROPY * math.log(n)
        else:
            even, clear = 1 / n, values > CLEAR_SHARE
        rows.append(
            {
                "role": role,
                "layer": int(metrics["layer"].iloc[best]),
                "head": int(metrics["head"].iloc[best]),
                "value": float(values[best]),
                "even": even,
                "heads": int(clear.sum()),
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class EmbeddingParts:
    """What the embedding layer adds up for one token: its own vector (scaled by sqrt(d_model)
    where the model scales) and its position's, and the block input they become."""

    token: np.ndarray  # [E] (E = d without an embedding projection)
    position: np.ndarray  # [E] (zeros for a RoPE model)
    output: np.ndarray  # [d] hidden_states[0]: the sum (plus token type, normalised, for BERT)


def embedding_parts(trace: Trace, sentence: int, position: int) -> EmbeddingParts:
    """Needs the hooks embed.hook_token and embed.hook_position; a trace without the position
    hook (a RoPE model has none: it adds no position vector) gets zeros for it."""
    names = hooks.embed()
    token = trace[names.token][sentence, position].float().cpu().numpy()
    added = names.position in trace.tensors
    return EmbeddingParts(
        token=token,
        position=trace[names.position][position].float().cpu().numpy()
        if added
        else np.zeros_like(token),
        output=trace.hidden_states[0][sentence, position].float().cpu().numpy(),
    )


def block_parameters(weights: Mapping, layer: int) -> dict[str, np.ndarray]:
    """Block `layer`'s weights from a model's state_dict, as float64 arrays named without the
    block's prefix ("self_attn.in_proj_weight", "norm1.weight", "linear1.bias", ...)."""
    prefix = block_path(layer) + "."
    return {
        name.removeprefix(prefix): np.asarray(value.detach().cpu().double().numpy())
        for name, value in weights.items()
        if name.startswith(prefix)
    }


def numpy_block_output(
    cfg: EncoderConfig, weights: Mapping, trace: Trace, layer: int
) -> np.ndarray:
    """encoder_block in NumPy on block `layer`'s input from the trace (every sentence, padding
    and all) with the model's weights: [B, T, d] float64."""
    x = trace.hidden_states[layer].cpu().double().numpy()
    mask = trace.attention_mask.cpu().numpy().astype(bool)
    return encoder_block(
        x,
        mask,
        block_parameters(weights, layer),
        heads=cfg.num_heads,
        norm_first=cfg.norm_first,
        act=ACTIVATIONS[cfg.activation],
        gated=cfg.gated,
        norm_type=cfg.norm_type,
        eps=cfg.layer_norm_eps,
        rope_base=cfg.rope_base_of(layer) if cfg.positional == "rope" else None,
        window=cfg.attention_window if cfg.is_local(layer) else 0,
    )


def numpy_block_check(cfg: EncoderConfig, weights: Mapping, trace: Trace) -> pd.DataFrame:
    """Every block recomputed in NumPy against the model's own output (hidden_states[layer + 1]),
    over every position of every sentence, padding included. Columns: layer, max_abs_diff,
    max_abs_value (the size of the numbers compared)."""
    rows = []
    for layer in range(cfg.num_layers):
        ours = numpy_block_output(cfg, weights, trace, layer)
        model = trace.hidden_states[layer + 1].cpu().double().numpy()
        rows.append(
            {
                "layer": layer,
                "max_abs_diff": float(np.abs(ours - model).max()),
                "max_abs_value": float(np.abs(model).max()),
            }
        )
    return pd.DataFrame(rows)


# The NumPy block's code paths, by the condition that opens each (as ast.unparse writes it), and
# whether a model takes it
# (None: it depends on the block, and the branch stays as written)
def _paths(cfg: EncoderConfig) -> dict[str, bool | None]:
    local = {cfg.is_local(layer) for layer in range(cfg.num_layers)}
    return {
        "rope_base is not None": cfg.positional == "rope",
        "window": local.pop() if len(local) == 1 else None,
        "gated": cfg.gated,
        "norm_first": cfg.norm_first,
        "norm_type == 'rmsnorm'": cfg.norm_type == "rmsnorm",
    }


def numpy_block_source(cfg: EncoderConfig) -> str:
    """encoder.inspect.numpy_block's code (from its imports on) as this model runs it: only the
    functions it calls (its norm, its activation, RoPE where it turns q and k), and of each
    branch on the architecture (pre- or post-norm, gated, RoPE, a window, the norm) only the
    side it takes. The functions keep their names and signatures, so the code still runs."""
    source = inspect.getsource(numpy_block)
    source = source[source.index("import math") :]
    lines = source.splitlines()
    paths = _paths(cfg)
    act = numpy_block.ACTIVATIONS[cfg.activation].__name__
    norm = "rms_norm" if cfg.norm_type == "rmsnorm" else "layer_norm"
    used = {"softmax", "self_attention", "encoder_block", norm, act}
    used |= {"rope"} if paths["rope_base is not None"] else set()
    used |= {"erf"} if act == "gelu" else set()
    edits: list[tuple[int, int, list[str]]] = []  # (first line, last line, 0-based) -> new lines
    tree = ast.parse(source)
    for node in tree.body:
        name = node.name if isinstance(node, ast.FunctionDef) else None
        if isinstance(node, ast.Assign):
            name = node.targets[0].id
        if name is not None and name not in used:
            first = node.lineno - 1
            while first > 0 and lines[first - 1].lstrip().startswith("#"):  # its comment
                first -= 1
            edits.append((first, node.end_lineno - 1, []))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and paths.get(ast.unparse(node.test)) is not None:
            taken = node.body if paths[ast.unparse(node.test)] else node.orelse
            edits.append((node.lineno - 1, node.end_lineno - 1, _dedented(lines, node, taken)))
    for first, last, new in sorted(edits, reverse=True):
        lines[first : last + 1] = new
    return re.sub(r"\n{4,}", "\n\n\n", "\n".join(lines)).strip() + "\n"


def _dedented(lines: list[str], branch: ast.If, taken: list[ast.stmt]) -> list[str]:
    """The lines of the branch taken, one level out, after its opening line's comment."""
    if not taken:
        return []
    indent = " " * branch.col_offset
    opening = lines[taken[0].lineno - 2]  # the `if ...:` or `else:` line above the body
    comment = opening.split("#", 1)[1].strip() if "#" in opening else None
    body = [line[4:] if line.startswith(indent + "    ") else line
            for line in lines[taken[0].lineno - 1 : taken[-1].end_lineno]]  # fmt: skip
    return ([f"{indent}# {comment}"] if comment else []) + body
