"""What every family's loader shares: the description of a family (its config reader, where its
tensors go in our encoder, the prefixes and heads it drops, where its masked-LM head is) and the
one reader that renames, stacks and checks a checkpoint's tensors against the config before the
encoder (and its masked-LM head, encoder.core.lm_head) is built.

A family module says only what is its own; the renaming of old LayerNorm gamma/beta, the
stacking of separate q, k, v projections into `in_proj`, the shape checks and the messages live
here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from encoder.core.config import EncoderConfig
from encoder.core.lm_head import LMHeadConfig, MaskedLMHead
from encoder.core.model import TransformerEncoder, block_path
from encoder.core.said import Said, said_of
from encoder.io.checkpoint_files import (
    CONFIG_FILE,
    INDEX_FILE,
    WEIGHTS_FILE,
    Files,
    file_source,
    listed,
    read_weights,
)
from encoder.io.tensor_checks import NoInit, check_layers, check_shape, meta_state

NameMap = dict[str, tuple[str, ...]]  # our parameter name -> the checkpoint tensors it is made of

# Tensors any family's checkpoint may carry that the encoder has no use for: buffers saved by
# old versions of transformers, the pooler and the task heads of fine-tuned models.
COMMON_IGNORED = (
    "embeddings.position_ids",
    "embeddings.token_type_ids",
    "pooler.",
    "classifier.",
    "qa_outputs.",
)


@dataclass(frozen=True)
class HeadTensors:
    """Where a checkpoint holds its masked-LM head: `names` maps our head's transform.* and
    norm.* to its tensors; `decoder` is its decoder weight (absent where it is tied to the word
    embeddings); `biases` its decoder bias, the first the file has (transformers 5 reads
    decoder.bias where it is saved, the head's own bias otherwise). `instead`: a prefix whose
    tensors, in a checkpoint without the head, say why it has none."""

    cfg: LMHeadConfig  # tied is decided from the file
    names: NameMap
    decoder: str
    biases: tuple[str, ...]
    instead: tuple[str, Said] | None = None


def head_tensors(
    transform: str,
    norm: str,
    decoder: str,
    biases: tuple[str, ...],
    instead: tuple[str, Said] | None = None,
    **cfg,
) -> HeadTensors:
    """A head whose transform, norm and decoder modules have these names; cfg: LMHeadConfig's
    fields."""
    names = parameter_names("transform", transform) | parameter_names("norm", norm)
    return HeadTensors(LMHeadConfig(**cfg), names, f"{decoder}.weight", biases, instead)


@dataclass(frozen=True)
class Family:
    """An encoder family the loaders read.

    names: config.json's model_type -> the family's name as the page shows it ("xlm-roberta" ->
    "XLM-R"); read_config: (config.json as a dict, its path for messages) -> EncoderConfig;
    tensors: the cfg's parameter names -> the checkpoint's tensors (every name the family could
    have; those the cfg's encoder lacks, such as biases it has none of, are dropped);
    prefixes: the base model's prefix in a checkpoint with heads ("roberta."), dropped;
    ignored: prefixes of tensors the encoder does not use (pretraining and task heads);
    head: (config.json, its EncoderConfig, its path) -> where its masked-LM head's tensors are.
    """

    names: dict[str, str]
    read_config: Callable[[dict, str], EncoderConfig]
    tensors: Callable[[EncoderConfig], NameMap]
    prefixes: tuple[str, ...]
    ignored: tuple[str, ...]
    head: Callable[[dict, EncoderConfig, str], HeadTensors]

    def name_of(self, model_type: str | None) -> str:
        """The family's name for a config's model_type (its first name when there is none)."""
        return self.names.get(model_type, next(iter(self.names.values())))


def config_values(config: dict, keys: dict[str, str], path: str) -> dict:
    """{our field: config[their key]} for `keys` (their key -> our field); ValueError naming the
    keys config.json lacks."""
    missing = [key for key in keys if key not in config]
    if missing:
        raise ValueError(Said("{path} lacks the keys {keys}", path=path, keys=", ".join(missing)))
    return {ours: config[key] for key, ours in keys.items()}


def activation_of(config: dict, key: str, table: dict[str, str], path: str) -> str:
    """Our activation for config[key] by `table` (their name -> ours); ValueError otherwise."""
    value = config.get(key)
    if not isinstance(value, str) or value not in table:
        raise ValueError(
            Said(
                "{path}: {key}={value!r} is not supported; use one of {choices}",
                path=path,
                key=key,
                value=value,
                choices=tuple(table),
            )
        )
    return table[value]


def encoder_config(path: str, **fields) -> EncoderConfig:
    """EncoderConfig(**fields); ValueError naming the config file when they are invalid."""
    try:
        return EncoderConfig(**fields)
    except (TypeError, ValueError) as error:
        raise ValueError(
            Said("{path} describes an invalid encoder: {error}", path=path, error=said_of(error))
        ) from error


def parameter_names(ours: str, theirs: str) -> NameMap:
    """A module's weight and bias: ours under module path `ours`, theirs under `theirs`."""
    return {f"{ours}.{kind}": (f"{theirs}.{kind}",) for kind in ("weight", "bias")}


def block_tensors(
    layer: int, theirs: str, modules: dict[str, str], qkv: tuple[str, ...]
) -> NameMap:
    """Block `layer`'s names: `modules` maps our sub-module ("norm1", "linear1") to theirs under
    module path `theirs`; `qkv` are their q, k and v projections (stacked, in that order, into
    in_proj) or their one fused projection."""
    ours = block_path(layer)
    names: NameMap = {}
    for our_module, their_module in modules.items():
        names |= parameter_names(f"{ours}.{our_module}", f"{theirs}.{their_module}")
    for kind in ("weight", "bias"):
        names[f"{ours}.self_attn.in_proj_{kind}"] = tuple(f"{theirs}.{part}.{kind}" for part in qkv)
    return names


def _their_name(name: str, prefixes: tuple[str, ...]) -> str:
    """Drop the base model's prefix; rename old LayerNorm gamma/beta to weight/bias."""
    for prefix in prefixes:
        name = name.removeprefix(prefix)
    if name.endswith(".gamma"):
        return name.removesuffix(".gamma") + ".weight"
    if name.endswith(".beta"):
        return name.removesuffix(".beta") + ".bias"
    return name


def _check_tensor(source: str, name: str, tensor: torch.Tensor, shape: tuple) -> None:
    """ValueError unless the checkpoint's tensor `name` has `shape` and holds floats."""
    check_shape(source, name, tensor, shape)
    if not tensor.is_floating_point():
        raise ValueError(
            Said(
                "{source}: tensor {name} is {dtype}, not floats",
                source=source,
                name=name,
                dtype=str(tensor.dtype),
            )
        )


def map_weights(
    tensors: dict[str, torch.Tensor], family: Family, cfg: EncoderConfig, source: str
) -> dict[str, torch.Tensor]:
    """Rename (and stack q, k, v of) a family's tensors into a state_dict for
    TransformerEncoder(cfg). ValueError naming the missing, unexpected or mis-shaped tensors."""
    theirs = {_their_name(name, family.prefixes): tensor for name, tensor in tensors.items()}
    ignored = (*COMMON_IGNORED, *family.ignored)
    theirs = {name: tensor for name, tensor in theirs.items() if not name.startswith(ignored)}
    expected = meta_state(lambda: TransformerEncoder(cfg))  # shapes only, nothing allocated
    name_map = {ours: parts for ours, parts in family.tensors(cfg).items() if ours in expected}
    unmapped = [ours for ours in expected if ours not in name_map]
    if unmapped:
        raise ValueError(
            Said(
                "{source}: no tensor of this family fills the encoder's {names}",
                source=source,
                names=listed(unmapped),
            )
        )
    used = {part for parts in name_map.values() for part in parts}
    missing = sorted(used - set(theirs))
    if missing:
        raise ValueError(
            Said("{source} lacks the tensors {names}", source=source, names=listed(missing))
        )
    unexpected = sorted(set(theirs) - used)
    if unexpected:
        raise ValueError(
            Said(
                "{source} has tensors this encoder does not use: {names}",
                source=source,
                names=listed(unexpected),
            )
        )

    state: dict[str, torch.Tensor] = {}
    for ours, parts in name_map.items():
        shape = tuple(expected[ours].shape)
        part_shape = (shape[0] // len(parts), *shape[1:])  # q, k, v each take a third of the rows
        for part in parts:
            _check_tensor(source, part, theirs[part], part_shape)
        pieces = [theirs[part] for part in parts]
        state[ours] = pieces[0] if len(pieces) == 1 else torch.cat(pieces)  # no needless copy
    return state


def head_from_tensors(
    tensors: dict[str, torch.Tensor],
    spec: HeadTensors,
    config: dict,
    model: TransformerEncoder,
    source: str,
) -> tuple[MaskedLMHead | None, Said | None]:
    """(the masked-LM head, None), tied to the model's word embeddings where the checkpoint ties
    them (config.json's tie_word_embeddings, transformers' default true, and no decoder weight of
    its own or one equal to the word table); or (None, why there is none): the tensors it lacks,
    or the one whose shape or dtype is wrong (the encoder still loads: only the head is refused)."""
    theirs = {_their_name(name, ()): tensor for name, tensor in tensors.items()}
    words = model.embed.token.weight
    tied = config.get("tie_word_embeddings", True) is not False and (
        spec.decoder not in theirs or torch.equal(theirs[spec.decoder].to(words.dtype), words)
    )
    cfg = replace(spec.cfg, tied=tied)
    expected = meta_state(lambda: MaskedLMHead(cfg))
    name_map = {ours: parts for ours, parts in spec.names.items() if ours in expected}
    if not tied:
        name_map["decoder.weight"] = (spec.decoder,)
    if cfg.decoder_bias:
        name_map["bias"] = (next((b for b in spec.biases if b in theirs), spec.biases[-1]),)
    wanted = [part for parts in name_map.values() for part in parts]
    missing = [name for name in wanted if name not in theirs]
    if missing:
        if spec.instead is not None and any(n.startswith(spec.instead[0]) for n in theirs):
            return None, spec.instead[1]
        return None, Said(
            "{source} has no masked-LM head: it lacks the tensors {names}",
            source=source,
            names=listed(missing),
        )
    try:
        for ours, (part,) in name_map.items():
            _check_tensor(source, part, theirs[part], tuple(expected[ours].shape))
    except ValueError as error:
        return None, said_of(error)
    state = {ours: theirs[part].to(torch.float32) for ours, (part,) in name_map.items()}
    if tied:
        state["decoder.weight"] = words
    with torch.device("meta"), NoInit():
        head = MaskedLMHead(cfg)
    head.load_state_dict(state, strict=True, assign=True)
    if tied:
        head.tie(model.embed.token)
    return head.eval(), None


def encoder_from_files(
    family: Family, config: dict, files: Files, source: str
) -> tuple[TransformerEncoder, MaskedLMHead | None, Said | None]:
    """Our encoder (eval mode, float32) with the weights of a checkpoint of `family` whose parsed
    config.json is `config` and whose files are `files`, and its masked-LM head or why it has
    none (head_from_tensors)."""
    config_source = file_source(source, CONFIG_FILE)
    cfg = family.read_config(config, config_source)
    check_layers(cfg, config_source)
    weights = file_source(source, INDEX_FILE if INDEX_FILE in files else WEIGHTS_FILE)
    tensors = read_weights(files, source)
    state = map_weights(tensors, family, cfg, weights)
    with NoInit():  # every parameter is about to be overwritten by the checkpoint's
        model = TransformerEncoder(cfg)
    model.load_state_dict(state, strict=True)
    spec = family.head(config, cfg, config_source)
    return model.eval(), *head_from_tensors(tensors, spec, config, model, weights)
