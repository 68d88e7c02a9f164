"""EncoderConfig: every architectural choice of the encoder, validated up front. The choices a
person makes are described once, in encoder.core.options."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from encoder.core.options import OPTIONS
from encoder.core.said import Said

# The places dropout can sit in a block, each with its own rate (EncoderConfig.<place>_dropout):
# the attention weights after the softmax, each sublayer's output before the residual add, the
# feed-forward's hidden layer after the activation.
DROPOUT_PLACES = ("attention", "residual", "ffn")
# Activations whose feed-forward is gated: act(x W_in) * (x W_gate).
GATED_ACTIVATIONS = ("geglu", "swiglu")


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
    # "relu" | "gelu" (exact erf GELU, as torch and BERT use) | "gelu_tanh" (GELU's tanh
    # approximation, ALBERT's and ELECTRA's "gelu_new") | "geglu" | "swiglu" (gated: linear1
    # gives 2 * d_ff values, the first d_ff through GELU / SiLU times the second d_ff, the gate)
    activation: str = "gelu"
    norm_first: bool = True  # True = pre-norm, False = post-norm (the original paper)
    # Dropout in torch's places (the embeddings' output, the attention weights, each sublayer's
    # output before its residual add, the feed-forward's hidden layer), all at this rate...
    dropout: float = 0.0
    max_len: int = 512
    # "sinusoidal" | "learned": added to the token embeddings; "rope": nothing added, each block
    # rotates q and k by position (rotary, GPT-NeoX's half-split pairing: dimension j with
    # j + dk/2), frequencies rope_base^(-2j/dk)
    positional: str = "sinusoidal"
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
    # RoPE's base; local-window layers use rope_local_base where given (ModernBERT: 160000
    # global, 10000 local).
    rope_base: float = 10000.0
    rope_local_base: float | None = None
    # Biases on the linear layers (q, k, v, out, linear1, linear2, the embedding projection) and
    # on the norms (LayerNorm's; RMSNorm has none either way). ModernBERT has neither.
    linear_bias: bool = True
    norm_bias: bool = True
    # Local attention: 0 = every token sees every token; w > 0 = a query sees only the keys
    # within w // 2 positions of it (ModernBERT's local_attention, 128)...
    attention_window: int = 0
    # ...except in the layers whose index is a multiple of global_every (0: none; ModernBERT: 3,
    # so layers 0, 3, 6, ... are global).
    global_every: int = 0
    # The embeddings' width when it differs from d_model (0: d_model): token, position and
    # token-type tables and the embedding norm are this wide, and a linear layer projects them to
    # d_model (ALBERT, ELECTRA's small models).
    embedding_size: int = 0
    # Every block uses block 0's weights (ALBERT): one set of parameters, applied num_layers times.
    shared_layers: bool = False
    # Pre-norm only: False = block 0 has no norm before its attention (ModernBERT, whose
    # embedding norm already normalises block 0's input).
    first_attention_norm: bool = True
    # Learned positions start at this row of the table (RoBERTa and XLM-R: padding_idx + 1 = 2):
    # the table has max_len + position_offset rows, token t reads row position_offset + t.
    position_offset: int = 0

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    @property
    def gated(self) -> bool:
        """True for a gated feed-forward (GeGLU, SwiGLU): linear1 gives 2 * d_ff values."""
        return self.activation in GATED_ACTIVATIONS

    @property
    def embedding_width(self) -> int:
        """The embeddings' width: embedding_size, or d_model when that is 0."""
        return self.embedding_size or self.d_model

    def is_local(self, layer: int) -> bool:
        """True when block `layer` attends through the local window."""
        if not self.attention_window:
            return False
        return not (self.global_every and layer % self.global_every == 0)

    def has_attention_norm(self, layer: int) -> bool:
        """False for block 0 of a pre-norm model with first_attention_norm off (ModernBERT):
        its attention reads the embeddings' output itself."""
        return not (layer == 0 and self.norm_first and not self.first_attention_norm)

    def rope_base_of(self, layer: int) -> float:
        """RoPE's base in block `layer` (rope_local_base in a local layer, where given)."""
        if self.is_local(layer) and self.rope_local_base is not None:
            return self.rope_local_base
        return self.rope_base

    def dropout_rates(self) -> dict[str, float]:
        """{place: rate} for each of DROPOUT_PLACES, a place without its own rate taking
        `dropout`'s."""
        own = {place: getattr(self, f"{place}_dropout") for place in DROPOUT_PLACES}
        return {place: self.dropout if rate is None else rate for place, rate in own.items()}

    def to_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> None:
        """Raise ValueError naming the offending values and the rule they break."""
        self._check_sizes()
        self._check_kinds()
        self._check_ranges()

    def _check_sizes(self) -> None:
        """The sizes: whole numbers of at least 1, heads that divide d_model, an even width for
        sines and cosines."""
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
                raise ValueError(
                    Said("{name}={value!r} must be a whole number", name=name, value=value)
                )
            if value < 1:
                raise ValueError(Said("{name}={value} must be at least 1", name=name, value=value))
        if self.d_model % self.num_heads != 0:
            raise ValueError(
                Said(
                    "d_model={d_model} is not divisible by num_heads={heads}: each head gets "
                    "d_model / num_heads dimensions, so num_heads must divide d_model",
                    d_model=self.d_model,
                    heads=self.num_heads,
                )
            )
        if self.positional == "sinusoidal" and self.embedding_width % 2 != 0:
            name = "embedding_size" if self.embedding_size else "d_model"
            raise ValueError(
                Said(
                    "{name}={width} must be even for positional='sinusoidal' (sine and cosine "
                    "take one dimension each)",
                    name=name,
                    width=self.embedding_width,
                )
            )

    def _check_kinds(self) -> None:
        """The named options, the switches and the rates: each of its kind."""
        for option in OPTIONS:  # the named options held as the config holds them (not flags)
            value = getattr(self, option.field)
            if option.named and option.holds_config_value and value not in option.choices:
                raise ValueError(
                    Said(
                        "{name}={value!r} must be one of {choices}",
                        name=option.field,
                        value=value,
                        choices=option.choices,
                    )
                )
        if not isinstance(self.norm_first, bool):
            raise ValueError(
                Said("norm_first={value!r} must be True (pre-norm) or False", value=self.norm_first)
            )
        flags = ("scale_embeddings", "embedding_norm", "linear_bias", "norm_bias")
        for name in (*flags, "shared_layers", "first_attention_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    Said(
                        "{name}={value!r} must be True or False",
                        name=name,
                        value=getattr(self, name),
                    )
                )
        value = self.layer_norm_eps
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(
                Said("{name}={value!r} must be a number", name="layer_norm_eps", value=value)
            )
        own_rates = [f"{place}_dropout" for place in DROPOUT_PLACES]
        for name in ("dropout", *own_rates):
            value = getattr(self, name)
            if value is None and name != "dropout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(Said("{name}={value!r} must be a number", name=name, value=value))
            if not 0.0 <= value < 1.0:
                raise ValueError(Said("{name}={value} must be in [0, 1)", name=name, value=value))

    def _check_ranges(self) -> None:
        """The numbers within their ranges (eps, token types, windows, RoPE's bases, the seed)."""
        if not 0 < self.layer_norm_eps < math.inf:
            raise ValueError(
                Said(
                    "layer_norm_eps={value} must be positive and finite", value=self.layer_norm_eps
                )
            )
        if isinstance(self.type_vocab_size, bool) or not isinstance(self.type_vocab_size, int):
            raise ValueError(
                Said(
                    "{name}={value!r} must be a whole number",
                    name="type_vocab_size",
                    value=self.type_vocab_size,
                )
            )
        if self.type_vocab_size < 0:
            raise ValueError(
                Said("type_vocab_size={value} must be 0 or more", value=self.type_vocab_size)
            )
        for name in ("attention_window", "global_every", "embedding_size", "position_offset"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    Said("{name}={value!r} must be a whole number >= 0", name=name, value=value)
                )
        for name in ("rope_base", "rope_local_base"):
            value = getattr(self, name)
            if value is None and name == "rope_local_base":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(Said("{name}={value!r} must be a number", name=name, value=value))
            if not 1 < value < math.inf:
                raise ValueError(
                    Said("{name}={value} must be a finite number above 1", name=name, value=value)
                )
        if self.positional == "rope" and self.head_dim % 2 != 0:
            raise ValueError(
                Said(
                    "positional='rope' needs an even head dimension (d_model / num_heads = "
                    "{head_dim}): RoPE rotates pairs of dimensions",
                    head_dim=self.head_dim,
                )
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(
                Said("{name}={value!r} must be a whole number >= 0", name="seed", value=self.seed)
            )
