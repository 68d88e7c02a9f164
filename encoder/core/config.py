"""EncoderConfig: every architectural choice of the encoder, validated up front. The choices a
person makes are described once, in encoder.core.options."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from encoder.core.options import OPTIONS

# The places dropout can sit in a block, each with its own rate (EncoderConfig.<place>_dropout):
# the attention weights after the softmax, each sublayer's output before the residual add, the
# feed-forward's hidden layer after the activation.
DROPOUT_PLACES = ("attention", "residual", "ffn")


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
    # Dropout in torch's places (the embeddings' output, the attention weights, each sublayer's
    # output before its residual add, the feed-forward's hidden layer), all at this rate...
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
    # ...unless a place has its own rate (None: `dropout`'s): the attention weights after the
    # softmax, each sublayer's output before the residual add, the feed-forward's hidden layer.
    attention_dropout: float | None = None
    residual_dropout: float | None = None
    ffn_dropout: float | None = None

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    def dropout_rates(self) -> dict[str, float]:
        """{place: rate} for each of DROPOUT_PLACES, a place without its own rate taking
        `dropout`'s."""
        own = {place: getattr(self, f"{place}_dropout") for place in DROPOUT_PLACES}
        return {place: self.dropout if rate is None else rate for place, rate in own.items()}

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
        for option in OPTIONS:  # the named options but the placement (a bool, checked below)
            value = getattr(self, option.field)
            if option.named and option.key == option.field and value not in option.choices:
                raise ValueError(f"{option.field}={value!r} must be one of {option.choices}")
        if not isinstance(self.norm_first, bool):
            raise ValueError(f"norm_first={self.norm_first!r} must be True (pre-norm) or False")
        for name in ("scale_embeddings", "embedding_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} must be True or False")
        value = self.layer_norm_eps
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"layer_norm_eps={value!r} must be a number")
        own_rates = [f"{place}_dropout" for place in DROPOUT_PLACES]
        for name in ("dropout", *own_rates):
            value = getattr(self, name)
            if value is None and name != "dropout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name}={value!r} must be a number")
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name}={value} must be in [0, 1)")
        if not 0 < self.layer_norm_eps < math.inf:
            raise ValueError(f"layer_norm_eps={self.layer_norm_eps} must be positive and finite")
        if isinstance(self.type_vocab_size, bool) or not isinstance(self.type_vocab_size, int):
            raise ValueError(f"type_vocab_size={self.type_vocab_size!r} must be a whole number")
        if self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size={self.type_vocab_size} must be 0 or more")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed={self.seed!r} must be a whole number >= 0")
