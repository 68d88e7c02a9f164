"""The one description of each architecture option a person chooses: its EncoderConfig field,
its choices, how the page names it and its values, how a link's value is parsed, its CLI flag.

Everything else derives from `OPTIONS`: EncoderConfig's checks of named values, the sidebar's
controls and labels, the session keys and URL parsing, the "B differs" and changes sentences,
the command line's flags. To add an option (say an init scheme "init": "normal" | "xavier"):

1. add its field to EncoderConfig (encoder/core/config.py) and use it in the model;
2. add one entry here:

       ArchOption(
           field="init", key="init", label=N_("Initialisation"), noun=N_("initialisation"),
           choices=("normal", "xavier"), names={"normal": N_("normal"), "xavier": N_("Xavier")},
           phrase=N_("{} init"), flag="--init", help=N_("how the weights are drawn"),
       ),

(N_ marks each word the page shows for the catalogue; the page translates it where it shows it.)
That is all: the sidebar shows a radio, links take `init=xavier`, compare mode says "A with
Xavier init", and `python -m encoder trace --init xavier` works.

Values are held as the controls and links hold them (the key's value): the same as the config's
value for every option but the norm placement, whose key "norm" says "pre" / "post" for
`norm_first` True / False.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from encoder.core.said import N_, Said

# Where each block's norms sit, as people name it: "pre" (x + f(norm(x))) is norm_first=True,
# "post" (norm(x + f(x)), the original paper and BERT) is norm_first=False.
NORM_PLACEMENTS = ("pre", "post")


def norm_first_of(placement: str) -> bool:
    """The `norm_first` flag of a placement name ("pre" -> True, "post" -> False)."""
    if placement not in NORM_PLACEMENTS:
        raise ValueError(f"norm placement {placement!r} must be one of {NORM_PLACEMENTS}")
    return placement == "pre"


def placement_of(norm_first: bool) -> str:
    """The placement name of a `norm_first` flag (True -> "pre", False -> "post")."""
    return "pre" if norm_first else "post"


# A bias's switch, as controls and links say it ("on" is the config's True), and what an
# option that is one takes.
SWITCH = (N_("on"), N_("off"))  # each the page's name of itself
SWITCHED = {
    "choices": SWITCH,
    "to_config": lambda value: value == "on",
    "from_config": lambda flag: "on" if flag else "off",
}


def _whole(value: float) -> float | int:
    """A number as a link writes it: 10000.0 -> 10000."""
    return int(value) if float(value).is_integer() else value


def head_counts(d_model: int, most: int | None = None) -> list[int]:
    """The head counts that divide `d_model` (each head gets d_model / heads dimensions), at most
    `most` of them when given."""
    top = d_model if most is None else min(d_model, most)
    return [heads for heads in range(1, top + 1) if d_model % heads == 0]


def _same(value: object) -> object:
    return value


@dataclass(frozen=True)
class ArchOption:
    """One architecture option.

    field: the EncoderConfig field; key: the widget key and URL parameter; label: the control's
    label; noun: how a sentence names the option ("norm placement: pre-norm → post-norm");
    choices: the values a control offers (named options: every value there is; numbers: the
    usual ones, () where they are derived or a range); names: how the page names each value
    (the value itself when absent); labels: a control's longer wording of a value, where it has
    one; phrase: the value in a sentence ("{} heads" -> "8 heads"); bounds: the whole numbers a
    link may ask for; flag and help: the command line's; architecture: False for what says which
    weights rather than their shape (the seed); to_config / from_config: key value <-> config
    value."""

    field: str
    key: str
    label: str
    noun: str
    flag: str
    help: str
    choices: tuple = ()
    names: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    phrase: str = "{}"
    bounds: tuple[int, int] | None = None
    architecture: bool = True
    to_config: Callable[[object], object] = _same
    from_config: Callable[[object], object] = _same

    @property
    def named(self) -> bool:
        """True when the values are words (a closed set of choices), not whole numbers."""
        return self.bounds is None

    @property
    def holds_config_value(self) -> bool:
        """True when a key value is the config's value itself (not a flag's name: "pre")."""
        return self.to_config is _same

    @property
    def dest(self) -> str:
        """The attribute argparse gives the flag's value ("--d-model" -> "d_model")."""
        return self.flag.removeprefix("--").replace("-", "_")

    def name(self, value: object) -> str:
        """How the page names a key value ("relu" -> "ReLU", "pre" -> "pre-norm", 8 -> "8")."""
        return self.names.get(value, str(value)) if isinstance(value, str) else str(value)

    def label_of(self, value: object) -> str:
        """A control's wording of a key value ("pre" -> "Pre-norm: x + f(LN(x))")."""
        return self.labels.get(value, self.name(value)) if isinstance(value, str) else str(value)

    def say(self, value: object) -> str:
        """A key value in a sentence ("A with 8 heads, ReLU, learned positions")."""
        return self.phrase.format(self.name(value))

    def value_of(self, cfg: object) -> object:
        """The key value that shows an EncoderConfig's choice ("post" for norm_first=False); read
        by field name, so this table needs no import of the config it describes."""
        return self.from_config(getattr(cfg, self.field))

    def parse(self, raw: str) -> object:
        """A link's value, checked; ValueError naming the key and the value when it cannot be
        used."""
        return parse_value(self.key, raw, self.choices if self.named else (), self.bounds)


def parse_value(
    key: str, raw: str, choices: tuple = (), bounds: tuple[int, int] | None = None
) -> object:
    """A link's value for `key`: one of `choices`, else a whole number within `bounds`, else the
    text itself; ValueError with a sentence that names the key and the value."""
    if choices:
        if raw not in choices:
            raise ValueError(
                Said(
                    "{key}={raw!r} is not one of {choices}",
                    key=key,
                    raw=raw,
                    choices=", ".join(choices),
                )
            )
        return raw
    if bounds is None:
        return raw
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(Said("{key}={raw!r} is not a whole number", key=key, raw=raw)) from None
    low, high = bounds
    if not low <= value <= high:
        raise ValueError(
            Said("{key}={value} is outside {low}..{high}", key=key, value=value, low=low, high=high)
        )
    return value


OPTIONS: tuple[ArchOption, ...] = (
    ArchOption(
        field="norm_first",
        key="norm",
        label=N_("Norm placement"),
        noun=N_("norm placement"),
        flag="--norm",
        help=N_("where each block's norms sit: pre-norm or post-norm"),
        choices=NORM_PLACEMENTS,
        names={"pre": N_("pre-norm"), "post": N_("post-norm")},
        labels={"pre": N_("Pre-norm: x + f(LN(x))"), "post": N_("Post-norm: LN(x + f(x))")},
        to_config=norm_first_of,
        from_config=placement_of,
    ),
    ArchOption(
        field="d_model",
        key="d_model",
        label=N_("d_model"),
        noun=N_("d_model"),
        flag="--d-model",
        help=N_("model width"),
        choices=(16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024),
        phrase=N_("d_model {}"),
        bounds=(2, 4096),
    ),
    ArchOption(  # choices: head_counts(d_model)
        field="num_heads",
        key="num_heads",
        label=N_("Heads (divisors of d_model)"),
        noun=N_("heads"),
        flag="--heads",
        help=N_("attention heads"),
        phrase="{} heads",  # said with plural forms (app.settings.COUNTED)
        bounds=(1, 4096),
    ),
    ArchOption(  # choices: 1 .. the upper bound (a checkpoint may have more)
        field="num_layers",
        key="num_layers",
        label=N_("Layers"),
        noun=N_("layers"),
        flag="--layers",
        help=N_("encoder blocks"),
        phrase="{} layers",  # said with plural forms (app.settings.COUNTED)
        bounds=(1, 24),
    ),
    ArchOption(
        field="d_ff",
        key="d_ff",
        label=N_("d_ff (feed-forward width)"),
        noun=N_("d_ff"),
        flag="--d-ff",
        help=N_("feed-forward width"),
        choices=(64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192),
        phrase=N_("d_ff {}"),
        bounds=(1, 16384),
    ),
    ArchOption(
        field="activation",
        key="activation",
        label=N_("Activation"),
        noun=N_("activation"),
        flag="--activation",
        help=N_("the feed-forward's activation"),
        choices=("relu", "gelu", "gelu_tanh", "geglu", "swiglu"),
        names={
            "relu": N_("ReLU"),
            "gelu": N_("GELU"),
            "gelu_tanh": N_("GELU (tanh)"),
            "geglu": N_("GeGLU"),
            "swiglu": N_("SwiGLU"),
        },
    ),
    ArchOption(
        field="norm_type",
        key="norm_type",
        label=N_("Norm type"),
        noun=N_("norm type"),
        flag="--norm-type",
        help=N_("LayerNorm (mean and spread) or RMSNorm (spread only, no bias)"),
        choices=("layernorm", "rmsnorm"),
        names={"layernorm": N_("LayerNorm"), "rmsnorm": N_("RMSNorm")},
    ),
    ArchOption(
        field="positional",
        key="positional",
        label=N_("Positions"),
        noun=N_("positions"),
        flag="--positional",
        help=N_("how positions are added to the token embeddings"),
        choices=("sinusoidal", "learned", "rope"),
        names={
            "sinusoidal": N_("sinusoidal"),
            "learned": N_("learned"),
            "rope": N_("rotary (RoPE)"),
        },
        labels={"sinusoidal": N_("Sinusoidal"), "learned": N_("Learned"), "rope": N_("RoPE")},
        phrase=N_("{} positions"),
    ),
    ArchOption(
        field="rope_base",
        key="rope_base",
        label=N_("RoPE base"),
        noun=N_("RoPE base"),
        flag="--rope-base",
        help=N_("RoPE's base: dimension pair j turns by position x base^(-2j/dk)"),
        choices=(100, 1000, 10000, 160000, 500000),
        phrase=N_("RoPE base {}"),
        bounds=(2, 10_000_000),
        to_config=float,
        from_config=_whole,
    ),
    ArchOption(
        field="linear_bias",
        key="bias",
        label=N_("Linear biases"),
        noun=N_("linear biases"),
        flag="--bias",
        help=N_("biases on the linear layers (q, k, v, out, the feed-forward's)"),
        phrase=N_("linear biases {}"),
        **SWITCHED,
    ),
    ArchOption(
        field="norm_bias",
        key="norm_bias",
        label=N_("Norm biases"),
        noun=N_("norm biases"),
        flag="--norm-bias",
        help=N_("LayerNorm's bias (RMSNorm has none either way)"),
        phrase=N_("norm biases {}"),
        **SWITCHED,
    ),
    ArchOption(
        field="attention_window",
        key="window",
        label=N_("Attention window (0 = global)"),
        noun=N_("attention window"),
        flag="--window",
        help=N_("local attention: a query sees the keys within window / 2 positions (0: all keys)"),
        choices=(0, 4, 8, 16, 32, 64, 128),
        phrase=N_("window {}"),
        bounds=(0, 8192),
    ),
    ArchOption(
        field="global_every",
        key="global_every",
        label=N_("Global every N layers (0 = none)"),
        noun=N_("global layers"),
        flag="--global-every",
        help=N_("with a window, layers 0, N, 2N... stay global (ModernBERT: 3)"),
        choices=(0, 1, 2, 3, 4),
        phrase=N_("global every {} layers"),
        bounds=(0, 64),
    ),
    ArchOption(
        field="embedding_size",
        key="embedding_size",
        label=N_("Embedding size (0 = d_model)"),
        noun=N_("embedding size"),
        flag="--embedding-size",
        help=N_("the embeddings' width, projected to d_model when it differs (ALBERT)"),
        choices=(0, 16, 32, 64, 128, 256),
        phrase=N_("embedding size {}"),
        bounds=(0, 4096),
    ),
    ArchOption(
        field="shared_layers",
        key="shared",
        label=N_("Layer weights"),
        noun=N_("layer weights"),
        flag="--shared",
        help=N_("separate weights per block, or one set shared by every block (ALBERT)"),
        choices=("separate", "shared"),
        names={
            "separate": N_("separate weights per layer"),
            "shared": N_("one layer's weights shared"),
        },
        labels={"separate": N_("Separate"), "shared": N_("Shared (ALBERT)")},
        to_config=lambda value: value == "shared",
        from_config=lambda shared: "shared" if shared else "separate",
    ),
    ArchOption(
        field="seed",
        key="seed",
        label=N_("Seed"),
        noun=N_("seed"),
        flag="--seed",
        help=N_("weight seed"),
        phrase=N_("seed {}"),
        bounds=(0, 2**31 - 1),
        architecture=False,
    ),
)
BY_FIELD: dict[str, ArchOption] = {option.field: option for option in OPTIONS}
BY_KEY: dict[str, ArchOption] = {option.key: option for option in OPTIONS}

# The fields a person chooses when building an encoder (the sidebar's controls, what a training
# run takes over from it); the others come from a checkpoint or a task, and the seed says which
# weights, not their shape.
ARCHITECTURE_FIELDS = tuple(option.field for option in OPTIONS if option.architecture)
# How the page, the tables and the charts name each choice.
ACTIVATION_NAMES = dict(BY_FIELD["activation"].names)
NORM_TYPE_NAMES = dict(BY_FIELD["norm_type"].names)
# A gated activation's own function, the one its input half goes through before the gate
# multiplies it: GeGLU = GELU(x W_in) * (x W_gate), SwiGLU = SiLU(x W_in) * (x W_gate).
GATED_INNER = {"geglu": "GELU", "swiglu": "SiLU"}


def key_values(cfg: object) -> dict[str, object]:
    """Every option's key value that shows `cfg` ({"norm": "pre", "d_model": 256, ...})."""
    return {option.key: option.value_of(cfg) for option in OPTIONS}


def config_values(values: Mapping[str, object]) -> dict[str, object]:
    """The EncoderConfig fields that the options' key values say (keys absent are left out)."""
    return {o.field: o.to_config(values[o.key]) for o in OPTIONS if o.key in values}
