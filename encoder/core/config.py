"""EncoderConfig: every architectural choice of the encoder, validated up front."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

ACTIVATIONS = ("relu", "gelu")
POSITIONALS = ("sinusoidal", "learned")
NORM_TYPES = ("layernorm", "rmsnorm")
# Where each block's norms sit, as people name it: "pre" (x + f(norm(x))) is norm_first=True,
# "post" (norm(x + f(x)), the original paper and BERT) is norm_first=False.
NORM_PLACEMENTS = ("pre", "post")
# How the page, the tables and the charts name each choice.
ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU"}
NORM_TYPE_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}
# The fields a person chooses when building an encoder (the sidebar's controls, what a training
# run takes over from it); the others come from a checkpoint or a task.
ARCHITECTURE_FIELDS = (
    "norm_first",
    "num_layers",
    "d_model",
    "num_heads",
    "d_ff",
    "activation",
    "positional",
    "norm_type",
)


def norm_first_of(placement: str) -> bool:
    """The `norm_first` flag of a placement name ("pre" -> True, "post" -> False)."""
    if placement not in NORM_PLACEMENTS:
        raise ValueError(f"norm placement {placement!r} must be one of {NORM_PLACEMENTS}")
    return placement == "pre"


def placement_of(norm_first: bool) -> str:
    """The placement name of a `norm_first` flag (True -> "pre", False -> "post")."""
    return "pre" if norm_first else "post"


def head_counts(d_model: int, most: int | None = None) -> list[int]:
    """The head counts that divide `d_model` (each head gets d_model / heads dimensions), at most
    `most` of them when given."""
    top = d_model if most is None else min(d_model, most)
    return [heads for heads in range(1, top + 1) if d_model % heads == 0]


@dataclass(frozen=True)
class EncoderConfig:
    """The whole architecture of a TransformerEncoder.

    The defaults describe a small classroom encoder; `load_pretrained` fills in BERT's values
    (post-norm, GELU, learned positions, token types, an embedding LayerNorm, no embedding scale).
    """

    vocab_size: int = 30522
    d_model: int = 256
    num_heads: int = 4
    num_layers: int = 4
    d_ff: int = 1024
    activation: str = "gelu"  # "relu" | "gelu" (exact erf GELU, as torch and BERT use)
    norm_first: bool = True  # True = pre-norm, False = post-norm (the original paper)
    dropout: float = 0.0
    max_len: int = 512
    positional: str = "sinusoidal"  # "sinusoidal" | "learned"
    layer_norm_eps: float = 1e-5
    norm_type: str = "layernorm"  # "layernorm" | "rmsnorm"
    seed: int = 0
    # Multiply token embeddings by sqrt(d_model), as in "Attention Is All You Need"; BERT does not.
    scale_embeddings: bool = True
    # Token-type (segment) embeddings, as BERT has; 0 = none.
    type_vocab_size: int = 0
    # A norm right after the embeddings, as BERT has.
    embedding_norm: bool = False

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    def to_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> None:
        """Raise ValueError naming the offending values and the rule they break."""
        positive = {
            "vocab_size": self.vocab_size,
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "num_layers": self.num_layers,
            "d_ff": self.d_ff,
            "max_len": self.max_len,
        }
        for name, value in positive.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name}={value!r} must be a whole number")
            if value < 1:
                raise ValueError(f"{name}={value} must be at least 1")
        if self.d_model % self.num_heads != 0:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}: "
                f"each head gets d_model / num_heads dimensions, so num_heads must divide d_model"
            )
        if self.positional == "sinusoidal" and self.d_model % 2 != 0:
            raise ValueError(
                f"d_model={self.d_model} must be even for positional='sinusoidal' "
                f"(sine and cosine take one dimension each)"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation={self.activation!r} must be one of {ACTIVATIONS}")
        if self.positional not in POSITIONALS:
            raise ValueError(f"positional={self.positional!r} must be one of {POSITIONALS}")
        if self.norm_type not in NORM_TYPES:
            raise ValueError(f"norm_type={self.norm_type!r} must be one of {NORM_TYPES}")
        if not isinstance(self.norm_first, bool):
            raise ValueError(f"norm_first={self.norm_first!r} must be True (pre-norm) or False")
        for name in ("scale_embeddings", "embedding_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} must be True or False")
        for name in ("dropout", "layer_norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name}={value!r} must be a number")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must be in [0, 1)")
        if not 0 < self.layer_norm_eps < math.inf:
            raise ValueError(f"layer_norm_eps={self.layer_norm_eps} must be positive and finite")
        if isinstance(self.type_vocab_size, bool) or not isinstance(self.type_vocab_size, int):
            raise ValueError(f"type_vocab_size={self.type_vocab_size!r} must be a whole number")
        if self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size={self.type_vocab_size} must be 0 or more")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed={self.seed!r} must be a whole number >= 0")
