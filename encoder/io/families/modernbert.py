"""ModernBERT (transformers' modeling_modernbert): a pre-norm encoder with rotary positions (RoPE),
a gated GELU feed-forward (GeGLU: Wi gives the activation's input, then the gate), no biases
(attention_bias, mlp_bias, norm_bias as configured), a LayerNorm on the token embeddings, no norm
before the first block's attention (the embedding norm is its input's), and a final norm.

Attention is global in layers 0, n, 2n, ... (n = global_attn_every_n_layers, or the config's
layer_types) and local elsewhere: a query sees the keys within local_attention // 2 positions of
it. Global layers rotate with one RoPE base and local layers with another: transformers 5 writes
them as rope_parameters {"full_attention": {"rope_theta": ...}, "sliding_attention": {...}},
earlier versions as global_rope_theta and local_rope_theta. Keys a config.json leaves out take
ModernBertConfig's defaults, as transformers does.
"""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.core.said import Said
from encoder.io.families.bert import ACTIVATIONS as BERT_ACTIVATIONS
from encoder.io.families.family import (
    Family,
    HeadTensors,
    NameMap,
    activation_of,
    block_tensors,
    config_values,
    encoder_config,
    head_tensors,
    parameter_names,
)

REQUIRED_KEYS = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "num_attention_heads": "num_heads",
    "num_hidden_layers": "num_layers",
    "intermediate_size": "d_ff",
}
# ModernBertConfig's defaults for the keys a config.json may leave out
DEFAULTS = {
    "hidden_activation": "gelu",
    "max_position_embeddings": 8192,
    "norm_eps": 1e-5,
    "norm_bias": False,
    "attention_bias": False,
    "mlp_bias": False,
    "local_attention": 128,
    "global_attn_every_n_layers": 3,
    "global_rope_theta": 160_000.0,
    "local_rope_theta": 10_000.0,
    "embedding_dropout": 0.0,
    "attention_dropout": 0.0,
    "mlp_dropout": 0.0,
    "classifier_activation": "gelu",
    "classifier_bias": False,
    "decoder_bias": True,
}
# The gated feed-forward act(input) * gate for each hidden_activation ("gelu" is exact erf GELU).
ACTIVATIONS = {"gelu": "geglu", "silu": "swiglu"}
# rope_parameters' key for global and for local layers
ROPE_KINDS = {"global": "full_attention", "local": "sliding_attention"}
LAYER_MODULES = {
    "self_attn.out_proj": "attn.Wo",
    "norm1": "attn_norm",
    "linear1": "mlp.Wi",
    "linear2": "mlp.Wo",
    "norm2": "mlp_norm",
}


def _setting(config: dict, key: str):
    return config.get(key, DEFAULTS[key])


def _rope_bases(config: dict, path: str) -> tuple[float, float]:
    """(global base, local base) from rope_parameters (transformers 5) or the *_rope_theta keys."""
    if config.get("rope_scaling") is not None:
        raise ValueError(
            Said(
                "{path}: rope_scaling={value!r} is not supported",
                path=path,
                value=config["rope_scaling"],
            )
        )
    parameters = config.get("rope_parameters")
    if parameters is None:
        return _setting(config, "global_rope_theta"), _setting(config, "local_rope_theta")
    if not isinstance(parameters, dict):
        raise ValueError(
            Said(
                "{path}: rope_parameters={value!r} must be a JSON object",
                path=path,
                value=parameters,
            )
        )
    bases = []
    for kind, key in ROPE_KINDS.items():
        rope = parameters.get(key) or {}  # a kind left out takes the *_rope_theta key's base
        if not isinstance(rope, dict) or rope.get("rope_type", "default") != "default":
            raise ValueError(
                Said(
                    "{path}: rope_parameters[{key!r}]={value!r} is not supported; only plain "
                    "RoPE (rope_type 'default' with a rope_theta) is",
                    path=path,
                    key=key,
                    value=rope,
                )
            )
        bases.append(rope.get("rope_theta", _setting(config, f"{kind}_rope_theta")))
    return bases[0], bases[1]


def _global_every(config: dict, num_layers: int, path: str) -> int:
    """n such that layers 0, n, 2n, ... are global and the rest local (0: none is global)."""
    every = _setting(config, "global_attn_every_n_layers")
    types = config.get("layer_types")
    if types is None:
        return every
    if not isinstance(types, list) or len(types) != num_layers:
        raise ValueError(
            Said(
                "{path}: layer_types must list one type per layer ({layers})",
                path=path,
                layers=num_layers,
            )
        )
    global_layers = [i for i, kind in enumerate(types) if kind == "full_attention"]
    if not global_layers:
        return 0
    every = global_layers[1] if len(global_layers) > 1 else num_layers
    expected = [
        "full_attention" if i % every == 0 else "sliding_attention" for i in range(num_layers)
    ]
    if types != expected:
        raise ValueError(
            Said(
                "{path}: layer_types={value!r} is not global attention every n layers from layer "
                "0 (the pattern this encoder's attention window takes)",
                path=path,
                value=types,
            )
        )
    return every


def modernbert_config(config: dict, path: str) -> EncoderConfig:
    fields = config_values(config, REQUIRED_KEYS, path)
    biases = {key: _setting(config, key) for key in ("attention_bias", "mlp_bias")}
    if biases["attention_bias"] != biases["mlp_bias"]:
        raise ValueError(
            Said(
                "{path}: attention_bias={attention} and mlp_bias={mlp} differ; this encoder has "
                "one switch for the biases of all its linear layers",
                path=path,
                attention=biases["attention_bias"],
                mlp=biases["mlp_bias"],
            )
        )
    rope_base, rope_local_base = _rope_bases(config, path)
    return encoder_config(
        path,
        **fields,
        activation=activation_of({**DEFAULTS, **config}, "hidden_activation", ACTIVATIONS, path),
        max_len=_setting(config, "max_position_embeddings"),
        layer_norm_eps=_setting(config, "norm_eps"),
        dropout=_setting(config, "embedding_dropout"),
        attention_dropout=_setting(config, "attention_dropout"),
        residual_dropout=_setting(config, "attention_dropout"),
        ffn_dropout=_setting(config, "mlp_dropout"),
        norm_first=True,
        positional="rope",
        rope_base=rope_base,
        rope_local_base=rope_local_base,
        linear_bias=biases["attention_bias"],
        norm_bias=_setting(config, "norm_bias"),
        attention_window=_setting(config, "local_attention"),
        global_every=_global_every(config, fields["num_layers"], path),
        scale_embeddings=False,
        embedding_norm=True,
        norm_type="layernorm",
        type_vocab_size=0,
        first_attention_norm=False,
    )


def modernbert_tensors(cfg: EncoderConfig) -> NameMap:
    """Wqkv is already q, k and v stacked (rows q, then k, then v, each head after head); Wi the
    activation's input rows, then the gate's, as our gated linear1."""
    names = parameter_names("embed.token", "embeddings.tok_embeddings")
    names |= parameter_names("embed.norm", "embeddings.norm")
    names |= parameter_names("norm", "final_norm")
    for i in range(cfg.num_layers):
        names |= block_tensors(i, f"layers.{i}", LAYER_MODULES, ("attn.Wqkv",))
    return names


def modernbert_head(config: dict, cfg: EncoderConfig, path: str) -> HeadTensors:
    """ModernBertPredictionHead (head.dense with classifier_bias, classifier_activation,
    head.norm with norm_bias) and the decoder (decoder_bias)."""
    return head_tensors(
        "head.dense",
        "head.norm",
        "decoder",
        ("decoder.bias",),
        d_model=cfg.d_model,
        width=cfg.d_model,
        vocab_size=cfg.vocab_size,
        activation=activation_of(
            {**DEFAULTS, **config}, "classifier_activation", BERT_ACTIVATIONS, path
        ),
        norm_eps=cfg.layer_norm_eps,
        norm_bias=cfg.norm_bias,
        transform_bias=_setting(config, "classifier_bias"),
        decoder_bias=_setting(config, "decoder_bias"),
    )


MODERNBERT = Family(
    names={"modernbert": "ModernBERT"},
    read_config=modernbert_config,
    tensors=modernbert_tensors,
    prefixes=("model.",),
    ignored=("head.", "decoder."),
    head=modernbert_head,
)
