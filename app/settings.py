"""What the controls offer and what they hand on: the settings types every layer reads.

The sidebar (app.controls) fills them in; app.main, the views and the lesson read them. Plain
values only (no Streamlit, no session), so views depend on this module and never on the controls.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from app.i18n import _, language, n_
from app.sources import LABELS as SOURCE_LABELS
from encoder import EncoderConfig
from encoder.core.options import BY_KEY, OPTIONS

# The architecture options' lists, all read from encoder.core.options' one table.
D_MODEL_CHOICES = list(BY_KEY["d_model"].choices)
D_FF_CHOICES = list(BY_KEY["d_ff"].choices)
LABELS = {  # how a control's value is named on the page
    **SOURCE_LABELS,
    **{
        value: option.label_of(value)
        for option in OPTIONS
        if option.named
        for value in option.choices
    },
}


@cache
def _words(spoken: str) -> dict[str, str]:
    """The controls' English words (encoder.core.options' labels, helps, value names and
    phrases; the model sources' names) as `spoken`, this run's language, says them (made once a
    language: a run asks for them about 60 times)."""
    return {
        "Random weights, my architecture": _("Random weights, my architecture"),
        "Pretrained MiniLM (all-MiniLM-L6-v2)": _("Pretrained MiniLM (all-MiniLM-L6-v2)"),
        # norm placement
        "Norm placement": _("Norm placement"),
        "where each block's norms sit: pre-norm or post-norm": _(
            "where each block's norms sit: pre-norm or post-norm"
        ),
        "pre-norm": _("pre-norm"),
        "post-norm": _("post-norm"),
        "Pre-norm: x + f(LN(x))": _("Pre-norm: x + f(LN(x))"),
        "Post-norm: LN(x + f(x))": _("Post-norm: LN(x + f(x))"),
        "norm placement": _("norm placement"),
        # widths, heads, layers
        "d_model": _("d_model"),
        "model width": _("model width"),
        "d_model {}": _("d_model {}"),
        "Heads (divisors of d_model)": _("Heads (divisors of d_model)"),
        "attention heads": _("attention heads"),
        "heads": _("heads"),
        "Layers": _("Layers"),
        "encoder blocks": _("encoder blocks"),
        "layers": _("layers"),
        "d_ff (feed-forward width)": _("d_ff (feed-forward width)"),
        "feed-forward width": _("feed-forward width"),
        "d_ff {}": _("d_ff {}"),
        "d_ff": _("d_ff"),
        # activation, norm type
        "Activation": _("Activation"),
        "the feed-forward's activation": _("the feed-forward's activation"),
        "ReLU": _("ReLU"),
        "GELU": _("GELU"),
        "GELU (tanh)": _("GELU (tanh)"),
        "GeGLU": _("GeGLU"),
        "SwiGLU": _("SwiGLU"),
        "{}": "{}",
        "activation": _("activation"),
        "Norm type": _("Norm type"),
        "LayerNorm (mean and spread) or RMSNorm (spread only, no bias)": _(
            "LayerNorm (mean and spread) or RMSNorm (spread only, no bias)"
        ),
        "LayerNorm": _("LayerNorm"),
        "RMSNorm": _("RMSNorm"),
        "norm type": _("norm type"),
        # positions
        "Positions": _("Positions"),
        "how positions are added to the token embeddings": _(
            "how positions are added to the token embeddings"
        ),
        "rotary (RoPE)": _("rotary (RoPE)"),
        "Sinusoidal": _("Sinusoidal"),
        "Learned": _("Learned"),
        "sinusoidal": _("sinusoidal"),
        "learned": _("learned"),
        "RoPE": _("RoPE"),
        "{} positions": _("{} positions"),
        "positions": _("positions"),
        "RoPE base": _("RoPE base"),
        "RoPE's base: dimension pair j turns by position x base^(-2j/dk)": _(
            "RoPE's base: dimension pair j turns by position x base^(-2j/dk)"
        ),
        "RoPE base {}": _("RoPE base {}"),
        # biases
        "Linear biases": _("Linear biases"),
        "biases on the linear layers (q, k, v, out, the feed-forward's)": _(
            "biases on the linear layers (q, k, v, out, the feed-forward's)"
        ),
        "linear biases {}": _("linear biases {}"),
        "linear biases": _("linear biases"),
        "Norm biases": _("Norm biases"),
        "LayerNorm's bias (RMSNorm has none either way)": _(
            "LayerNorm's bias (RMSNorm has none either way)"
        ),
        "norm biases {}": _("norm biases {}"),
        "norm biases": _("norm biases"),
        "on": _("on"),
        "off": _("off"),
        # local attention
        "Attention window (0 = global)": _("Attention window (0 = global)"),
        "local attention: a query sees the keys within window / 2 positions (0: all keys)": _(
            "local attention: a query sees the keys within window / 2 positions (0: all keys)"
        ),
        "window {}": _("window {}"),
        "attention window": _("attention window"),
        "Global every N layers (0 = none)": _("Global every N layers (0 = none)"),
        "with a window, layers 0, N, 2N... stay global (ModernBERT: 3)": _(
            "with a window, layers 0, N, 2N... stay global (ModernBERT: 3)"
        ),
        "global every {} layers": _("global every {} layers"),
        "global layers": _("global layers"),
        # embeddings, shared layers, seed
        "Embedding size (0 = d_model)": _("Embedding size (0 = d_model)"),
        "the embeddings' width, projected to d_model when it differs (ALBERT)": _(
            "the embeddings' width, projected to d_model when it differs (ALBERT)"
        ),
        "embedding size {}": _("embedding size {}"),
        "embedding size": _("embedding size"),
        "Layer weights": _("Layer weights"),
        "separate weights per block, or one set shared by every block (ALBERT)": _(
            "separate weights per block, or one set shared by every block (ALBERT)"
        ),
        "separate weights per layer": _("separate weights per layer"),
        "one layer's weights shared": _("one layer's weights shared"),
        "Separate": _("Separate"),
        "Shared (ALBERT)": _("Shared (ALBERT)"),
        "layer weights": _("layer weights"),
        "Seed": _("Seed"),
        "weight seed": _("weight seed"),
        "seed {}": _("seed {}"),
        "seed": _("seed"),
    }


def shown(text: str | None) -> str | None:
    """A control's English word (a label, a help, a value's name, a source's name) as this
    run's language says it; any other text (a model's own name) as it is."""
    return _words(language()).get(text, text) if text is not None else None


COUNTED = {  # the options said with the language's plural forms ("1 layer"), not their phrase
    "num_heads": lambda count: n_("{count} head", "{count} heads", count),
    "num_layers": lambda count: n_("{count} layer", "{count} layers", count),
}


def say(key: str, value: object) -> str:
    """An option's value in a sentence ("post-norm", "8 heads", "1 layer"), in this run's
    language."""
    if key in COUNTED:
        return COUNTED[key](int(value))
    option = BY_KEY[key]
    return shown(option.phrase).format(shown(option.name(value)))


LESSON_RULE_QUERY = -1  # lesson_query: the lesson's rule picks the query
ARCHITECTURE_KEYS = tuple(option.key for option in OPTIONS if option.architecture)


def architecture_values(cfg: EncoderConfig) -> dict[str, object]:
    """The architecture widgets' values that show `cfg`."""
    return {key: BY_KEY[key].value_of(cfg) for key in ARCHITECTURE_KEYS}


@dataclass(frozen=True)
class Setup:
    """One setup: its model source, its config (None when impossible: `error` says why) and the
    heads its run switches off (compare mode; otherwise the Attention view's own section)."""

    source: str
    cfg: EncoderConfig | None
    error: str = ""
    heads_off: str = ""  # "layer.head,..."


@dataclass
class Settings:
    """What the sidebar says for this run: the text, the device, setup A, and setup B in compare
    mode."""

    text: str
    device: str
    notices: list[str]
    a: Setup
    b: Setup | None = None  # None: compare mode is off

    @property
    def cfg(self) -> EncoderConfig | None:
        """Setup A's architecture; None when it is impossible (`error` says why)."""
        return self.a.cfg

    @property
    def error(self) -> str:
        return self.a.error
